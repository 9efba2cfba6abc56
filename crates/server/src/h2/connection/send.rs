//! What the server sends on a stream: the response's head (HEADERS and
//! CONTINUATION), its body in DATA frames within both send windows, its
//! trailers; and the stream an HTTP/1.1 upgrade hands over.

use super::*;

/// The most DATA an upgrade's response (stream 1) sends before the
/// client's preface arrives: with our SETTINGS and the response's HEADERS
/// it stays under the 32 KiB that curl 7.x keeps of what follows the
/// `101` in the read that brought it ("connection buffer size is too
/// small to store data following HTTP Upgrade response header"; mod_h2
/// met the same, icing/mod_h2#144).
const BEFORE_PREFACE_DATA: usize = 16 * 1024;

impl Connection {
    /// Sends a response's head on `stream`: `:status`, then `fields`
    /// (lowercase names). With `end_stream`, the response has no body.
    /// Informational heads (1xx) may come first, any number of them, never
    /// with `end_stream` (RFC 9113 8.1). Does nothing for a stream that is
    /// gone (reset).
    ///
    /// Misuse resets the stream with RST_STREAM(INTERNAL_ERROR), so that
    /// the client sees the server's fault, never a malformed response: a
    /// second final head, or a 1xx with `end_stream`. A status that is
    /// not one (outside 100-999, or 101, which HTTP/2 forbids: 8.6) is
    /// sent as 500.
    pub fn send_headers<'f>(
        &mut self,
        id: u32,
        status: u16,
        fields: impl IntoIterator<Item = Field<'f>>,
        end_stream: bool,
    ) {
        let Some(stream) = self.streams.get_mut(&id) else { return };
        if stream.local_closed || self.phase == Phase::Closed {
            return;
        }
        // Not a status (RFC 9110 15: three digits, 1xx to 5xx in use): the
        // answer is the server's fault, 500, never another code by accident.
        let status = if (100..=999).contains(&status) && status != 101 { status } else { 500 };
        let informational = status < 200;
        if stream.answered || (informational && end_stream) {
            return self.reset(id, ErrorCode::INTERNAL_ERROR);
        }
        stream.answered = !informational;
        let mut digits = [0u8; 3];
        digits[0] = b'0' + (status / 100) as u8;
        digits[1] = b'0' + (status / 10 % 10) as u8;
        digits[2] = b'0' + (status % 10) as u8;
        self.scratch.clear();
        let status_field = Field::new(b":status", &digits);
        // Each field re-borrowed for as long as `digits` lives.
        let fields = fields.into_iter().map(|field| Field { ..field });
        self.encoder.encode(core::iter::once(status_field).chain(fields), &mut self.scratch);
        frame::encode_headers(
            &mut self.out,
            id,
            &self.scratch,
            end_stream,
            self.peer.max_frame_size,
        );
        if end_stream {
            self.local_end(id);
        }
    }

    /// Sends trailer fields on stream `id` (RFC 9113 §8.1): a HEADERS
    /// frame (with CONTINUATIONs past the client's frame size) with
    /// END_STREAM, after the response's last DATA, which must not have
    /// carried END_STREAM. The fields must not be pseudo-fields; the
    /// caller leaves out connection-specific ones (8.2.2). Before the
    /// response's final head ([`send_headers`](Self::send_headers)) this
    /// is misuse: the stream is reset with RST_STREAM(INTERNAL_ERROR)
    /// instead of sending a head without `:status`.
    pub fn send_trailers<'f>(&mut self, id: u32, fields: impl IntoIterator<Item = Field<'f>>) {
        let Some(stream) = self.streams.get_mut(&id) else { return };
        if stream.local_closed || self.phase == Phase::Closed {
            return;
        }
        if !stream.answered {
            return self.reset(id, ErrorCode::INTERNAL_ERROR);
        }
        self.scratch.clear();
        self.encoder.encode(fields, &mut self.scratch);
        frame::encode_headers(&mut self.out, id, &self.scratch, true, self.peer.max_frame_size);
        self.local_end(id);
    }

    /// Sends as much of `data` on `stream` as both send windows allow, in
    /// frames of at most the client's SETTINGS_MAX_FRAME_SIZE, and returns
    /// how much that was; END_STREAM goes on the last frame once all of
    /// `data` is sent. The rest waits for [`Streams::writable`]. A stream
    /// that is gone takes everything (and sends nothing). The payload is
    /// copied into the output. Before the response's final head
    /// ([`send_headers`](Self::send_headers)) this is misuse: the stream is
    /// reset with RST_STREAM(INTERNAL_ERROR) and takes everything.
    pub fn send_data(&mut self, id: u32, data: &[u8], end_stream: bool) -> usize {
        self.frame_data(id, data.len(), end_stream, |out, _, range| out.put_slice(&data[range]))
    }

    /// [`send_data`](Self::send_data) without the copy: the frames'
    /// payloads are slices of `data` (reference-counted, or static), sent
    /// in place by one vectored write with the frame headers around them
    /// ([`output_slices`](Self::output_slices)). What was sent is taken
    /// off the front of `data`.
    pub fn send_shared(&mut self, id: u32, data: &mut Bytes, end_stream: bool) -> usize {
        let n = self.frame_data(id, data.len(), end_stream, |out, shared, range| {
            shared.push(out.len(), data.slice(range));
        });
        data.advance(n);
        n
    }

    /// The framing of both `send_` calls: takes the credit for up to `len`
    /// bytes and writes the frame headers, each followed by
    /// `payload(out, shared, range)` for its part of the data (not called
    /// for an empty frame).
    fn frame_data(
        &mut self,
        id: u32,
        len: usize,
        end_stream: bool,
        mut payload: impl FnMut(&mut Vec<u8>, &mut Pieces, std::ops::Range<usize>),
    ) -> usize {
        let Some(stream) = self.streams.get_mut(&id) else { return len };
        if stream.local_closed || self.phase == Phase::Closed {
            return len;
        }
        if !stream.answered {
            // DATA before the head is no response: misuse (see send_data).
            self.reset(id, ErrorCode::INTERNAL_ERROR);
            return len;
        }
        let mut credit = stream.output.available().min(self.send.available()).max(0) as usize;
        if self.phase == Phase::Preface {
            // An upgrade's response, before the client's preface shows it
            // has switched: a first flight that fits what curl 7.x keeps
            // of the bytes after the `101` (32 KiB, or it fails the
            // transfer); the rest follows the preface, a round trip later.
            credit = credit.min(BEFORE_PREFACE_DATA.saturating_sub(self.before_preface));
        }
        let n = len.min(credit);
        if self.phase == Phase::Preface {
            self.before_preface += n;
        }
        let finish = end_stream && n == len;
        if n == 0 && !finish {
            // No credit: nothing to frame (and no window to touch).
            return 0;
        }
        // The client's SETTINGS_MAX_FRAME_SIZE, which SETTINGS checking
        // keeps at most MAX_FRAME_LEN; clamped too, so that every frame
        // below is one a DATA header can carry by construction.
        let max_frame = self.peer.max_frame_size.min(frame::MAX_FRAME_LEN) as usize;
        let mut sent = 0;
        // Both windows grant `n` in full: the worker alone uses them.
        let granted = (
            stream.output.try_reserve(n as u32).unwrap_or(0),
            self.send.try_reserve(n as u32).unwrap_or(0),
        );
        debug_assert_eq!(granted, (n as u32, n as u32));
        loop {
            let len = (n - sent).min(max_frame);
            let last = sent + len == n;
            if len == 0 && !(last && finish) {
                break;
            }
            let header = frame::data_header(id, len as u32, last && finish)
                .expect("a DATA frame at most max_frame, which is at most MAX_FRAME_LEN");
            self.out.put_slice(&header);
            if last && 0 < len && len < max_frame && n == credit {
                // Cut short by the client's credit, not by the data: its
                // framing is the client's doing (a byte of credit at a
                // time), not a response it takes.
                self.data_header_bytes += header.len() as u64;
            }
            if len > 0 {
                payload(&mut self.out, &mut self.shared, sent..sent + len);
            }
            sent += len;
            if last {
                break;
            }
        }
        if finish {
            self.local_end(id);
        }
        n
    }

    /// Takes over a connection upgraded from HTTP/1.1 (`Upgrade: h2c`,
    /// RFC 7540 3.2): `prefix` (the `101 Switching Protocols` response)
    /// goes out before our SETTINGS, `settings` (the decoded
    /// `HTTP2-Settings` payload) applies as the client's first SETTINGS
    /// (no acknowledgement: RFC 7540 3.2.1), and the request that asked
    /// for the upgrade becomes stream 1, half-closed (remote). The client's
    /// preface follows.
    ///
    /// # Errors
    /// [`UpgradeError::NotFresh`] unless the connection is as
    /// [`new`](Self::new) made it (nothing received, no output consumed or
    /// DATA queued, no stream, no GOAWAY); [`UpgradeError::Settings`] when `settings`
    /// is not a valid SETTINGS payload. Nothing was changed then.
    pub fn upgrade(
        &mut self,
        prefix: &[u8],
        settings: &[u8],
        head: Head,
        streams: &mut impl Streams,
    ) -> Result<(), UpgradeError> {
        let fresh = self.phase == Phase::Preface
            && !self.output_taken
            && self.shared.is_empty()
            && self.last_stream == 0
            && self.streams.is_empty()
            && self.goaway.is_none()
            && !self.draining
            && self.error.is_none();
        if !fresh {
            return Err(UpgradeError::NotFresh);
        }
        let header = FrameHeader {
            length: u32::try_from(settings.len()).unwrap_or(u32::MAX),
            kind: frame::kind::SETTINGS,
            flags: 0,
            stream: 0,
        };
        let parsed = Frame::parse(header, settings, frame::MAX_FRAME_LEN);
        let Frame::Settings { params, .. } = parsed.map_err(UpgradeError::Settings)? else {
            unreachable!("a SETTINGS header parses as SETTINGS")
        };
        for (id, value) in params {
            // Each was validated by the parse, and there is no stream
            // whose window a new initial size could take past 2^31-1.
            self.setting(id, value).map_err(UpgradeError::Settings)?;
        }
        self.out.splice(0..0, prefix.iter().copied());
        self.head = head;
        self.last_stream = 1;
        self.open(1, true, streams);
        Ok(())
    }
}
