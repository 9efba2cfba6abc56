//! Flow control on falconet-flow: DATA counted against the stream's and
//! the connection's receive windows, the credit its reader releases
//! announced, and the client's WINDOW_UPDATEs for what we send.

use super::*;

impl Connection {
    pub(super) fn data(
        &mut self,
        id: u32,
        end_stream: bool,
        data: &[u8],
        flow_len: u32,
        streams: &mut impl Streams,
    ) {
        let work = !data.is_empty() || end_stream;
        if !work && self.empty_frame() {
            return;
        }
        let Some(stream) = self.streams.get_mut(&id) else {
            if id > self.last_stream {
                return self.fail(ErrorCode::PROTOCOL_ERROR, "DATA on an idle stream");
            }
            // Closed: the bytes still count against the connection (6.9).
            if !self.discard(flow_len) {
                return;
            }
            if !self.recently_closed.contains(id)
                && (self.recently_reset.contains(id) || self.ignored(id))
            {
                // Sent before the client saw our RST_STREAM, or on a
                // stream opened after our GOAWAY: dropped, not reset
                // (bytes cost the client what they cost us, and a window's
                // worth of small frames may be in flight). Its end is the
                // client's last word: DATA after it is STREAM_CLOSED, so
                // that repeated empty ends are not free.
                if end_stream {
                    self.remember_closed(id);
                }
            } else if self.recently_reset.contains(id) {
                // Ended by the client and reset by us since (the
                // STREAM_CLOSED below, once): ignored (5.1), not reset
                // again (5.4.2: one RST_STREAM per stream), from the
                // allowance of frames the server ignores.
                self.ignore_frame();
            } else {
                // Ended by the client (its END_STREAM or RST_STREAM), or
                // never reset by us: STREAM_CLOSED (5.1).
                self.stream_error(id, ErrorCode::STREAM_CLOSED, streams);
            }
            return;
        };
        if stream.remote_closed {
            if self.discard(flow_len) {
                self.stream_error(id, ErrorCode::STREAM_CLOSED, streams);
            }
            return;
        }
        match stream.input.try_advance(flow_len) {
            Ok((Advance::Accepted, update)) => {
                self.connection_update(update);
                if work {
                    // Work done (for an open stream: DATA dropped on a
                    // closed one does none) pays back one idle frame.
                    self.empty_frames = self.empty_frames.saturating_sub(1);
                    self.request_frames += 1;
                }
            }
            Ok((Advance::Aborted, update)) => {
                // The application gave the body up: dropped, as on a
                // stream we reset, but the stream is open: its end still
                // ends the request (DATA after it is STREAM_CLOSED), and
                // its bytes count toward its content-length, which its
                // trailers are checked against.
                stream.received += data.len() as u64;
                stream.remote_closed |= end_stream;
                self.connection_update(update);
                if end_stream {
                    streams.data(id, &[], true);
                    self.complete_if_closed(id);
                }
                return;
            }
            Err(error) => {
                self.connection_update(error.connection_update);
                if error.scope == Scope::Connection {
                    return self
                        .fail(ErrorCode::FLOW_CONTROL_ERROR, "DATA past the connection window");
                }
                return self.stream_error(id, ErrorCode::FLOW_CONTROL_ERROR, streams);
            }
        }
        let Some(stream) = self.streams.get_mut(&id) else { return };
        stream.received += data.len() as u64;
        self.body_bytes += data.len() as u64;
        let length_broken = stream.content_length.is_some_and(|length| {
            stream.received > length || (end_stream && stream.received != length)
        });
        if length_broken {
            // 8.1.1: the body's length differs from content-length. The
            // frame is never read: its credit goes back to the connection
            // (the stream's own is moot, it is reset).
            match stream.input.release(flow_len) {
                Ok(updates) => self.connection_update(updates.connection),
                Err(_) => return self.fail(ErrorCode::INTERNAL_ERROR, "receive window accounting"),
            }
            return self.stream_error(id, ErrorCode::PROTOCOL_ERROR, streams);
        }
        if end_stream {
            stream.remote_closed = true;
            stream.input.disable_updates();
        }
        let consumed = streams.data(id, data, end_stream);
        // Padding is never read: it goes back at once, and the data too
        // when the sink consumed it.
        let release = if consumed { flow_len } else { flow_len - data.len() as u32 };
        let Some(stream) = self.streams.get(&id) else { return };
        if release == 0 {
            return self.complete_if_closed(id);
        }
        match stream.input.release(release) {
            Ok(updates) => self.updates(id, updates),
            Err(_) => self.fail(ErrorCode::INTERNAL_ERROR, "receive window accounting"),
        }
        self.complete_if_closed(id);
    }

    /// Counts DATA on a stream that no longer takes it against the
    /// connection window and gives it straight back. False after a
    /// connection error.
    pub(super) fn discard(&mut self, flow_len: u32) -> bool {
        if self.recv.try_advance(flow_len).is_err() {
            self.fail(ErrorCode::FLOW_CONTROL_ERROR, "DATA past the connection window");
            return false;
        }
        match self.recv.release(flow_len) {
            Ok(falconet_flow::Release::Update(n)) => {
                // An answer to the client's own frames, as an
                // acknowledgement is: not a response it takes.
                let start = self.out.len();
                window_update(&mut self.out, 0, n);
                self.answer_bytes += (self.out.len() - start) as u64;
            }
            Ok(_) => {}
            Err(_) => {
                self.fail(ErrorCode::INTERNAL_ERROR, "receive window accounting");
                return false;
            }
        }
        true
    }

    /// A fresh receive side for a new stream: a finished stream's, when no
    /// handle to it is left (no allocation), or a new one.
    pub(super) fn stream_input(&mut self) -> Result<Arc<StreamInput>, falconet_flow::FlowError> {
        let ours = self.local.initial_window_size;
        let initial = self.stream_initial();
        // Credit goes back at our window's share even while the stream's
        // window is the default's: a client that applied our smaller one
        // (and has not acknowledged it yet) is not left waiting.
        let threshold = update_threshold(ours);
        while let Some(mut input) = self.spare_inputs.pop() {
            if let Some(reusable) = Arc::get_mut(&mut input) {
                // Bytes the finished stream received and nobody consumed
                // (none where its reader aborted it) go back.
                let update = reusable.reset_with_threshold(initial, threshold)?;
                self.connection_update(update);
                return Ok(input);
            }
        }
        Ok(Arc::new(StreamInput::with_threshold(Arc::clone(&self.recv), initial, threshold)?))
    }

    /// The receive window a new stream starts with: our
    /// SETTINGS_INITIAL_WINDOW_SIZE once the client acknowledged it; before
    /// that never less than the default 65,535, which the client may still
    /// be using (6.9.3: a receiver "MUST be prepared to receive data that
    /// exceeds this window size, since the sender might send data that
    /// exceeds the lower limit prior to processing the SETTINGS frame").
    fn stream_initial(&self) -> u32 {
        let ours = self.local.initial_window_size;
        if self.settings_acked { ours } else { ours.max(frame::DEFAULT_INITIAL_WINDOW_SIZE) }
    }

    /// The client acknowledged a SETTINGS_INITIAL_WINDOW_SIZE below the
    /// default: streams opened before, whose windows are 65,535 here, are
    /// now smaller by the difference on the client's side (it applied our
    /// delta to them, 6.9.2, or opened them at our value once it had
    /// processed our SETTINGS). One WINDOW_UPDATE of the difference for
    /// each stream still sending puts the client's window back at ours,
    /// in either case: 65,535 less what it sent, plus what we gave back.
    pub(super) fn lift_early_streams(&mut self) {
        let lift =
            frame::DEFAULT_INITIAL_WINDOW_SIZE.saturating_sub(self.local.initial_window_size);
        if lift == 0 {
            return;
        }
        for (&id, stream) in &self.streams {
            if !stream.remote_closed {
                window_update(&mut self.out, id, lift);
            }
        }
    }

    pub(super) fn window_update(&mut self, id: u32, increment: u32, streams: &mut impl Streams) {
        if id == 0 {
            if self.send.increase(increment).is_err() {
                return self.fail(ErrorCode::FLOW_CONTROL_ERROR, "connection window past 2^31-1");
            }
            return streams.writable(0);
        }
        let Some(stream) = self.streams.get(&id) else {
            if id > self.last_stream {
                self.fail(ErrorCode::PROTOCOL_ERROR, "WINDOW_UPDATE on an idle stream");
            } else {
                // Closed: credit for a response that has ended.
                self.ignore_frame();
            }
            return;
        };
        if stream.output.increase(increment).is_err() {
            return self.stream_error(id, ErrorCode::FLOW_CONTROL_ERROR, streams);
        }
        streams.writable(id);
    }

    pub(super) fn connection_update(&mut self, update: Option<u32>) {
        if let Some(n) = update {
            window_update(&mut self.out, 0, n);
        }
    }

    fn updates(&mut self, id: u32, updates: Updates) {
        if let Some(n) = updates.stream {
            window_update(&mut self.out, id, n);
        }
        self.connection_update(updates.connection);
    }

    /// Sends the WINDOW_UPDATEs an application's release asked for
    /// (see [`Streams::data`]); a stream update for a stream that is gone
    /// is dropped, the connection's always goes. An increment of 0, or
    /// past 2^31-1 (which no window's release gives), sends nothing.
    pub fn send_updates(&mut self, id: u32, updates: Updates) {
        if self.phase == Phase::Closed {
            return;
        }
        if let Some(n) = updates.stream
            && self.streams.contains_key(&id)
        {
            window_update(&mut self.out, id, n);
        }
        self.connection_update(updates.connection);
    }

    /// Whether stream `id` is open and its body's reader still wants it:
    /// false once the reader gave it up (dropped it, or its read failed:
    /// its input is aborted, which the reader's wake finds, before its
    /// pipe handle is gone), and for a stream no longer open.
    pub fn body_wanted(&self, id: u32) -> bool {
        self.streams.get(&id).is_some_and(|stream| !stream.input.stream().state().aborted)
    }
}
