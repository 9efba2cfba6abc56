//! Field blocks: HEADERS and CONTINUATION gathered into one block,
//! decoded (HPACK) once it ends, and the stream it opens.

use super::*;

/// CONTINUATIONs per block that are never a flood, whatever the
/// header-list limit (h2 and nghttp2 allow 5 and 8).
const FREE_CONTINUATIONS: usize = 8;

impl Connection {
    pub(super) fn headers(
        &mut self,
        id: u32,
        end_stream: bool,
        end_headers: bool,
        fragment: &[u8],
        streams: &mut impl Streams,
    ) {
        if id.is_multiple_of(2) {
            return self.fail(ErrorCode::PROTOCOL_ERROR, "HEADERS on an even stream id");
        }
        let mut discard = false;
        if id <= self.last_stream && !self.streams.contains_key(&id) && !self.ignored(id) {
            if self.recently_closed.contains(id) {
                // A stream the client ended (its END_STREAM or its
                // RST_STREAM): STREAM_CLOSED (5.1).
                return self.fail(ErrorCode::STREAM_CLOSED, "HEADERS on a closed stream");
            } else if self.recently_reset.contains(id) {
                // 5.1: a stream we reset may still receive what the client
                // sent before it saw our RST_STREAM: its trailers, decoded
                // (the table must stay in step), then dropped. With
                // END_STREAM they close the stream for good, so each reset
                // (bounded by the reset budget) brings at most one; without
                // it they are never trailers and count as frames that do
                // no work.
                if !end_stream && self.empty_frame() {
                    return;
                }
                discard = true;
            } else {
                // An id below the last one that was never used (5.1.1).
                return self.fail(ErrorCode::PROTOCOL_ERROR, "stream id below the last one");
            }
        }
        let last_before = self.last_stream;
        self.last_stream = self.last_stream.max(id);
        let trailers = self.streams.contains_key(&id);
        self.block = Some(Block {
            stream: id,
            end_stream,
            continuations: 0,
            charged: 0,
            discard,
            trailers,
            last_before,
        });
        self.block_bytes.clear();
        self.block_bytes.extend_from_slice(fragment);
        if end_headers {
            self.end_block(streams);
        }
    }

    pub(super) fn continuation(
        &mut self,
        id: u32,
        end_headers: bool,
        fragment: &[u8],
        streams: &mut impl Streams,
    ) {
        let Some(block) = &mut self.block else {
            return self.fail(ErrorCode::PROTOCOL_ERROR, "CONTINUATION without HEADERS");
        };
        debug_assert_eq!(block.stream, id);
        // A block may be split anywhere (6.10), so the limit is on bytes:
        // the block's, and its CONTINUATIONs' with each frame counted as
        // at least `CONTINUATION_CHARGE`, so that a flood of tiny frames
        // ends as soon as one of big ones would. The first few frames
        // are free of the charge, for a small header-list limit.
        block.continuations += 1;
        block.charged += fragment.len().max(CONTINUATION_CHARGE);
        let list = self.config.max_header_list_size as usize;
        if self.block_bytes.len() + fragment.len() > list {
            // More compressed bytes than the limit allows buffered, and a
            // refused block must still be decoded whole to keep the table
            // in step: the connection ends (RFC 9113 10.5.1 allows it; see
            // docs/rfc9113.md, CONTINUATION flood).
            return self
                .fail(ErrorCode::ENHANCE_YOUR_CALM, "field block past the header-list limit");
        }
        if block.continuations > FREE_CONTINUATIONS && block.charged > list {
            return self.fail(ErrorCode::ENHANCE_YOUR_CALM, "CONTINUATION flood");
        }
        if fragment.is_empty() && !end_headers && self.empty_frame() {
            return;
        }
        self.block_bytes.extend_from_slice(fragment);
        if end_headers {
            self.end_block(streams);
        }
    }

    /// A field block is complete: decode it (always: 4.3), then open the
    /// stream, deliver trailers, or refuse.
    fn end_block(&mut self, streams: &mut impl Streams) {
        let Some(Block { stream: id, end_stream, mut discard, trailers, .. }) = self.block.take()
        else {
            return;
        };
        self.blocks_ended = self.blocks_ended.wrapping_add(1);
        // Trailers whose stream we ended while they arrived (the response
        // finished and reset the rest of the request, or the application
        // gave up): dropped, as on a stream reset before them. Never a new
        // request on the used id (5.1.1).
        discard |= trailers && !self.streams.contains_key(&id);
        self.head.clear();
        let head = &mut self.head;
        let decoded = self.decoder.decode(&self.block_bytes, |field| head.add(field));
        if let Err(error) = &decoded
            && error.is_connection_error()
        {
            return self.fail(ErrorCode::COMPRESSION_ERROR, "field block does not decode");
        }
        if discard {
            if end_stream {
                // The client's last word on it: HEADERS after this is a
                // closed stream's (`headers` looks at the closed first).
                self.remember_closed(id);
            }
            return;
        }
        if self.ignored(id) {
            // 6.8: after our final GOAWAY, new streams are ignored (never
            // an open stream's: those are at or below the GOAWAY's id),
            // from the allowance of frames the server ignores: work the
            // server does not do pays back no empty frame.
            return self.ignore_frame();
        }
        self.empty_frames = self.empty_frames.saturating_sub(1);
        if decoded.is_err() {
            // Over the header-list or field limit: the table is in step.
            if self.streams.contains_key(&id) {
                return self.stream_error(id, ErrorCode::PROTOCOL_ERROR, streams);
            }
            // A new request: opened with what fit, marked, so that it can be
            // answered `431` (RFC 9113 10.5.1) rather than only reset.
            self.head.mark_oversized();
        }
        if let Some(stream) = self.streams.get_mut(&id) {
            // Trailers: the body's end (8.1), no pseudo-fields, within
            // the bounds of HTTP/1.1's trailer section.
            if stream.remote_closed {
                return self.stream_error(id, ErrorCode::STREAM_CLOSED, streams);
            }
            let valid = end_stream
                && self.head.finish_trailers().is_ok()
                && self.head.trailer_section_fits()
                && stream.content_length.is_none_or(|length| length == stream.received);
            if !valid {
                return self.stream_error(id, ErrorCode::PROTOCOL_ERROR, streams);
            }
            stream.remote_closed = true;
            stream.input.disable_updates();
            self.request_frames += 1;
            streams.trailers(id, &self.head);
            streams.data(id, &[], true);
            return self.complete_if_closed(id);
        }
        if self.streams.len() >= self.config.max_concurrent_streams as usize {
            if self.free_refusals > 0 {
                self.free_refusals -= 1;
                return self.send_reset(id, ErrorCode::REFUSED_STREAM);
            }
            return self.refuse(id, ErrorCode::REFUSED_STREAM);
        }
        if self.head.finish().is_err()
            || (end_stream && self.head.content_length().is_some_and(|length| length != 0))
        {
            return self.refuse(id, ErrorCode::PROTOCOL_ERROR);
        }
        self.open(id, end_stream, streams);
    }

    /// Opens stream `id` for the request in `self.head` (checked).
    pub(super) fn open(&mut self, id: u32, end_stream: bool, streams: &mut impl Streams) {
        let input = match self.stream_input() {
            Ok(input) => input,
            Err(_) => return self.fail(ErrorCode::INTERNAL_ERROR, "stream window"),
        };
        let output = match OutputWindow::new(self.peer.initial_window_size) {
            Ok(output) => output,
            Err(_) => return self.fail(ErrorCode::INTERNAL_ERROR, "stream window"),
        };
        if end_stream {
            input.disable_updates();
        }
        let stream = Stream {
            remote_closed: end_stream,
            local_closed: false,
            answered: false,
            reading: false,
            input,
            output,
            content_length: self.head.content_length(),
            received: 0,
        };
        let input = Arc::clone(&stream.input);
        self.streams.insert(id, stream);
        self.request_frames += 1;
        self.ignored_allowance =
            (self.ignored_allowance + IGNORED_PER_STREAM).min(IGNORED_ALLOWANCE_MAX);
        streams.headers(id, &self.head, end_stream, &input);
    }
}
