//! The six SETTINGS parameters of one endpoint, and their ranges (§6.5.2).

use bytes::BufMut;

use super::*;

/// Checks a SETTINGS value against its range (§6.5.2); every value of the
/// other parameters, and of unknown ones, is valid.
pub(super) fn validate_setting(id: u16, value: u32) -> Result<(), FrameError> {
    let code = match id {
        setting::ENABLE_PUSH if value > 1 => ErrorCode::PROTOCOL_ERROR,
        setting::INITIAL_WINDOW_SIZE if value > MAX_WINDOW_SIZE => ErrorCode::FLOW_CONTROL_ERROR,
        setting::MAX_FRAME_SIZE if !(DEFAULT_MAX_FRAME_SIZE..=MAX_FRAME_LEN).contains(&value) => {
            ErrorCode::PROTOCOL_ERROR
        }
        _ => return Ok(()),
    };
    Err(FrameError::connection(code, Violation::SettingValue(id)))
}

/// The six parameters of §6.5.2, one endpoint's side: what a peer's
/// SETTINGS frames have set, or what we announce.
///
/// [`Default`] gives the values in force before any SETTINGS frame
/// ([`Settings::INITIAL`]). The fields are public for building our own
/// settings; keep them within the ranges [`apply`](Self::apply) enforces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// SETTINGS_HEADER_TABLE_SIZE, bytes.
    pub header_table_size: u32,
    /// SETTINGS_ENABLE_PUSH.
    pub enable_push: bool,
    /// SETTINGS_MAX_CONCURRENT_STREAMS; `None` for unlimited.
    pub max_concurrent_streams: Option<u32>,
    /// SETTINGS_INITIAL_WINDOW_SIZE, bytes, at most [`MAX_WINDOW_SIZE`].
    pub initial_window_size: u32,
    /// SETTINGS_MAX_FRAME_SIZE, bytes, in
    /// [`DEFAULT_MAX_FRAME_SIZE`]`..=`[`MAX_FRAME_LEN`].
    pub max_frame_size: u32,
    /// SETTINGS_MAX_HEADER_LIST_SIZE, bytes; `None` for unlimited.
    pub max_header_list_size: Option<u32>,
}

impl Settings {
    /// The initial values (§6.5.2), in force until a SETTINGS frame
    /// changes them.
    pub const INITIAL: Self = Self {
        header_table_size: DEFAULT_HEADER_TABLE_SIZE,
        enable_push: true,
        max_concurrent_streams: None,
        initial_window_size: DEFAULT_INITIAL_WINDOW_SIZE,
        max_frame_size: DEFAULT_MAX_FRAME_SIZE,
        max_header_list_size: None,
    };

    /// Sets one parameter, checking its value (§6.5.2): ENABLE_PUSH other
    /// than 0 or 1 and MAX_FRAME_SIZE out of range are connection errors
    /// PROTOCOL_ERROR, INITIAL_WINDOW_SIZE over 2^31-1 a connection error
    /// FLOW_CONTROL_ERROR. An unknown identifier is ignored.
    ///
    /// This only records the value: applying a new INITIAL_WINDOW_SIZE to
    /// open streams (§6.9.2) or HEADER_TABLE_SIZE to the HPACK encoder is
    /// the connection's job.
    ///
    /// # Errors
    /// A connection [`FrameError`] ([`Violation::SettingValue`]) for a
    /// value out of its range, as above; nothing is recorded.
    pub fn apply(&mut self, id: u16, value: u32) -> Result<(), FrameError> {
        validate_setting(id, value)?;
        match id {
            setting::HEADER_TABLE_SIZE => self.header_table_size = value,
            setting::ENABLE_PUSH => self.enable_push = value == 1,
            setting::MAX_CONCURRENT_STREAMS => self.max_concurrent_streams = Some(value),
            setting::INITIAL_WINDOW_SIZE => self.initial_window_size = value,
            setting::MAX_FRAME_SIZE => self.max_frame_size = value,
            setting::MAX_HEADER_LIST_SIZE => self.max_header_list_size = Some(value),
            _ => {}
        }
        Ok(())
    }

    /// The parameters that differ from `base` (usually
    /// [`Settings::INITIAL`], for the first SETTINGS frame), in identifier
    /// order: what a SETTINGS frame must carry to turn `base` into `self`.
    /// An unlimited value where `base` has a limit is sent as `u32::MAX`
    /// (the protocol has no way to say unlimited).
    pub fn changes(&self, base: &Settings) -> impl Iterator<Item = (u16, u32)> + use<> {
        let unlimited = |v: Option<u32>| v.unwrap_or(u32::MAX);
        let all = [
            (setting::HEADER_TABLE_SIZE, self.header_table_size, base.header_table_size),
            (setting::ENABLE_PUSH, u32::from(self.enable_push), u32::from(base.enable_push)),
            (
                setting::MAX_CONCURRENT_STREAMS,
                unlimited(self.max_concurrent_streams),
                unlimited(base.max_concurrent_streams),
            ),
            (setting::INITIAL_WINDOW_SIZE, self.initial_window_size, base.initial_window_size),
            (setting::MAX_FRAME_SIZE, self.max_frame_size, base.max_frame_size),
            (
                setting::MAX_HEADER_LIST_SIZE,
                unlimited(self.max_header_list_size),
                unlimited(base.max_header_list_size),
            ),
        ];
        all.into_iter().filter(|&(_, new, old)| new != old).map(|(id, new, _)| (id, new))
    }

    /// Appends a SETTINGS frame carrying [`changes`](Self::changes) from
    /// `base` (an empty one, still due, if nothing changed: §3.4).
    pub fn encode_changes(&self, base: &Settings, out: &mut impl BufMut) {
        let mut params = [(0, 0); 6];
        let mut n = 0;
        for (slot, change) in params.iter_mut().zip(self.changes(base)) {
            *slot = change;
            n += 1;
        }
        // Six parameters at most: the encoder never refuses them.
        let written = encode_settings(out, params.get(..n).unwrap_or_default());
        debug_assert!(written.is_ok(), "{written:?}");
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self::INITIAL
    }
}
