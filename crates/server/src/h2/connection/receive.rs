//! Reading: bytes in, frames out of them, each dispatched by type, and
//! the SETTINGS a client sends applied.

use super::*;

impl Connection {
    /// Reads every complete frame at the start of `input`, telling
    /// `streams` what they carry. Returns how many bytes were used; the
    /// caller keeps the rest (an incomplete frame) for the next call. After
    /// a connection error, everything is used and ignored.
    pub fn receive(&mut self, input: &[u8], streams: &mut impl Streams) -> usize {
        let mut pos = 0;
        loop {
            let rest = &input[pos..];
            match self.phase {
                Phase::Closed => return input.len(),
                Phase::Preface => {
                    let n = rest.len().min(PREFACE.len());
                    if rest[..n] != PREFACE[..n] {
                        self.fail(ErrorCode::PROTOCOL_ERROR, "not the HTTP/2 connection preface");
                        continue;
                    }
                    if n < PREFACE.len() {
                        return pos;
                    }
                    pos += PREFACE.len();
                    self.phase = Phase::FirstSettings;
                    continue;
                }
                Phase::FirstSettings | Phase::Open => {}
            }
            let Some(header_bytes) = rest.first_chunk::<HEADER_LEN>() else { return pos };
            let header = FrameHeader::parse(header_bytes);
            if let Some(reason) = self.out_of_turn(&header) {
                self.fail(ErrorCode::PROTOCOL_ERROR, reason);
                continue;
            }
            if let Err(error) = header.check_length(self.local.max_frame_size) {
                self.frame_error(error, streams);
                continue;
            }
            let end = HEADER_LEN + header.length as usize;
            let Some(payload) = rest.get(HEADER_LEN..end) else { return pos };
            pos += end;
            match Frame::parse(header, payload, self.local.max_frame_size) {
                Ok(frame) => self.frame(frame, streams),
                Err(error) => self.frame_error(error, streams),
            }
        }
    }

    /// [`receive`](Self::receive) for input that arrives in pieces (the
    /// blocks of a pipe) without putting it all together: `held` is what
    /// came before `chunk` and was not yet a whole frame. `held` is first
    /// completed from the front of `chunk` (a frame's worth at most), then
    /// the rest of `chunk` is received in place, and what is left of an
    /// incomplete frame at its end is kept in `held`. Only frames cut by a
    /// chunk's end are copied.
    pub fn receive_chunk(
        &mut self,
        held: &mut Vec<u8>,
        mut chunk: &[u8],
        streams: &mut impl Streams,
    ) {
        while !held.is_empty() && !chunk.is_empty() {
            let take = self.wants(held).min(chunk.len());
            held.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
            let used = self.receive(held, streams);
            held.drain(..used);
        }
        if held.is_empty() {
            let used = self.receive(chunk, streams);
            held.extend_from_slice(&chunk[used..]);
        }
    }

    /// How many more bytes `held` (the start of the input that
    /// [`receive`](Self::receive) left unconsumed) needs before `receive`
    /// can take it: the rest of the preface, or of the frame's header, or
    /// of the frame. At least 1 while `held` is not empty.
    pub fn wants(&self, held: &[u8]) -> usize {
        let needed = match self.phase {
            Phase::Closed => 0,
            Phase::Preface => PREFACE.len(),
            Phase::FirstSettings | Phase::Open => match held.first_chunk::<HEADER_LEN>() {
                Some(header) => HEADER_LEN + FrameHeader::parse(header).length as usize,
                None => HEADER_LEN,
            },
        };
        needed.saturating_sub(held.len()).max(usize::from(!held.is_empty()))
    }

    /// Whether a frame with this header may not come now, whatever its
    /// payload: the preface's first frame must be SETTINGS (3.4), and an
    /// open field block takes nothing but its own CONTINUATIONs (4.3,
    /// 6.10). Either is a connection PROTOCOL_ERROR, decided from the
    /// header before the frame is parsed, so that a malformed frame out of
    /// turn (a PRIORITY of 4 bytes inside a block) ends the connection
    /// too, not just its stream while the block goes on.
    fn out_of_turn(&self, header: &FrameHeader) -> Option<&'static str> {
        if self.phase == Phase::FirstSettings && header.kind != frame::kind::SETTINGS {
            return Some("the preface's first frame is not SETTINGS");
        }
        match self.block {
            Some(block)
                if header.kind != frame::kind::CONTINUATION || header.stream != block.stream =>
            {
                Some("frame inside a field block")
            }
            _ => None,
        }
    }

    /// One well-formed frame that came in turn (see
    /// [`out_of_turn`](Self::out_of_turn)).
    pub(super) fn frame(&mut self, frame: Frame<'_>, streams: &mut impl Streams) {
        if self.phase == Phase::FirstSettings {
            if !matches!(frame, Frame::Settings { ack: false, .. }) {
                return self
                    .fail(ErrorCode::PROTOCOL_ERROR, "the preface's first frame is not SETTINGS");
            }
            self.phase = Phase::Open;
        }
        match frame {
            Frame::Data { stream, end_stream, data, flow_len } => {
                self.data(stream, end_stream, data, flow_len, streams)
            }
            Frame::Headers { stream, end_stream, end_headers, fragment, .. } => {
                self.headers(stream, end_stream, end_headers, fragment, streams)
            }
            Frame::Continuation { stream, end_headers, fragment } => {
                // Part of a field block kept so far (a refused one counts
                // too, until its end shows it refused: the header timeout
                // bounds a block).
                if !fragment.is_empty() && self.block.is_some_and(|block| !block.discard) {
                    self.request_frames += 1;
                }
                self.continuation(stream, end_headers, fragment, streams)
            }
            // Ignored (PRIORITY is deprecated, 5.3.2; unknown types, 5.5,
            // PRIORITY_UPDATE among them), within an allowance that each
            // stream opened raises (as nginx's): a client that
            // reprioritizes is served, a flood of them is not.
            Frame::Priority { .. } | Frame::Unknown { .. } => self.ignore_frame(),
            Frame::RstStream { stream, .. } => self.rst_stream(stream, streams),
            // From now on the client knows our limits. We send one
            // SETTINGS: another acknowledgement does nothing.
            Frame::Settings { ack: true, .. } if self.settings_acked => self.ignore_frame(),
            Frame::Settings { ack: true, .. } => {
                self.settings_acked = true;
                // Our SETTINGS leave the table size at the default: this
                // changes nothing today, and holds the peer to any other.
                self.decoder.settings_acknowledged();
                self.free_refusals = 0;
                self.lift_early_streams();
            }
            Frame::Settings { ack: false, params } => {
                if params.len() > MAX_SETTINGS_PARAMS {
                    return self.fail(ErrorCode::ENHANCE_YOUR_CALM, "too many SETTINGS parameters");
                }
                for (id, value) in params {
                    if let Err(error) = self.setting(id, value) {
                        return self.frame_error(error, streams);
                    }
                    if self.phase == Phase::Closed {
                        // A value the connection failed on (GOAWAY sent):
                        // neither the rest applied nor an ACK (6.5.3).
                        return;
                    }
                }
                let start = self.out.len();
                frame::encode_settings_ack(&mut self.out);
                self.control_queued(start);
            }
            Frame::Ping { ack: false, payload } => {
                let start = self.out.len();
                frame::encode_ping(&mut self.out, payload, true);
                self.control_queued(start);
            }
            Frame::Ping { ack: true, payload } => {
                if self.draining && self.goaway.is_none() && payload == SHUTDOWN_PING {
                    self.final_goaway();
                } else {
                    // An acknowledgement of a PING we did not send.
                    self.ignore_frame();
                }
            }
            // The client is leaving: the connection ends with the streams
            // it has, and our GOAWAY says so first (6.8: "SHOULD always
            // send a GOAWAY frame before closing"), naming the last stream
            // we will process, as Go's server does. A second GOAWAY (6.8
            // allows lowering the last stream id) changes nothing here.
            Frame::GoAway { .. } if self.peer_goaway => self.ignore_frame(),
            Frame::GoAway { .. } => {
                self.peer_goaway = true;
                // Draining as after our own shutdown's last step: a later
                // shutdown must not send GOAWAY(2^31-1) after this one
                // (6.8: the last stream id never increases).
                self.goodbye();
            }
            Frame::WindowUpdate { stream, increment } => {
                self.window_update(stream, increment, streams)
            }
        }
    }

    /// One SETTINGS parameter from the client, already range-checked.
    pub(super) fn setting(&mut self, id: u16, value: u32) -> Result<(), FrameError> {
        let before = self.peer.initial_window_size;
        self.peer.apply(id, value)?;
        match id {
            setting::INITIAL_WINDOW_SIZE => {
                // 6.9.2: the change applies to every open stream's window.
                let delta = i64::from(value) - i64::from(before);
                let delta = i32::try_from(delta).unwrap_or(i32::MAX);
                let overflow = self
                    .streams
                    .values()
                    .any(|s| s.output.apply_initial_window_delta(delta).is_err());
                if overflow {
                    self.fail(ErrorCode::FLOW_CONTROL_ERROR, "SETTINGS took a window past 2^31-1");
                }
            }
            setting::HEADER_TABLE_SIZE => self.encoder.set_peer_table_size(value),
            _ => {}
        }
        Ok(())
    }
}
