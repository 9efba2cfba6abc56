//! The `Date` header value (IMF-fixdate), rendered once a second per worker.

use std::time::{SystemTime, UNIX_EPOCH};

/// Bytes in an IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
pub(crate) const DATE_LEN: usize = 29;

const DAYS: [&[u8; 3]; 7] = [b"Thu", b"Fri", b"Sat", b"Sun", b"Mon", b"Tue", b"Wed"];
const MONTHS: [&[u8; 3]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];

/// What every response carries after its status line.
const PREFIX: &[u8] = b"Server: falconet\r\nDate: ";
/// The server's own `Server` field, the start of [`PREFIX`] (removed from
/// a head whose application names its own).
pub(crate) const SERVER_FIELD: &[u8] = b"Server: falconet\r\n";
/// The fields every response starts with: `Server` and `Date`.
pub(crate) const FIELDS_LEN: usize = PREFIX.len() + DATE_LEN + 2;

/// The current date, re-rendered only when the second changes, inside the
/// `Server` and `Date` fields every response starts with (one copy per
/// response).
#[derive(Clone, Debug)]
pub(crate) struct DateCache {
    second: u64,
    fields: [u8; FIELDS_LEN],
}

impl DateCache {
    pub(crate) fn new() -> Self {
        let mut fields = [b' '; FIELDS_LEN];
        fields[..PREFIX.len()].copy_from_slice(PREFIX);
        fields[FIELDS_LEN - 2..].copy_from_slice(b"\r\n");
        let mut cache = Self { second: u64::MAX, fields };
        cache.update(SystemTime::now());
        cache
    }

    /// Re-renders if `now` is in another second than the cached text.
    pub(crate) fn update(&mut self, now: SystemTime) {
        let second = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        if second != self.second {
            self.second = second;
            self.fields[PREFIX.len()..PREFIX.len() + DATE_LEN].copy_from_slice(&render(second));
        }
    }

    /// `Server: falconet\r\nDate: <IMF-fixdate>\r\n`.
    pub(crate) fn fields(&self) -> &[u8; FIELDS_LEN] {
        &self.fields
    }

    #[cfg(test)]
    fn date(&self) -> &[u8] {
        &self.fields[PREFIX.len()..PREFIX.len() + DATE_LEN]
    }
}

/// Formats seconds since the Unix epoch as an IMF-fixdate.
pub(crate) fn render(secs: u64) -> [u8; DATE_LEN] {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    let mut out = [0u8; DATE_LEN];
    out[..3].copy_from_slice(DAYS[(days % 7) as usize]);
    out[3..5].copy_from_slice(b", ");
    two(&mut out[5..7], day);
    out[7] = b' ';
    out[8..11].copy_from_slice(MONTHS[(month - 1) as usize]);
    out[11] = b' ';
    let year = year.min(9999);
    two(&mut out[12..14], year / 100);
    two(&mut out[14..16], year % 100);
    out[16] = b' ';
    two(&mut out[17..19], rem / 3600);
    out[19] = b':';
    two(&mut out[20..22], rem / 60 % 60);
    out[22] = b':';
    two(&mut out[23..25], rem % 60);
    out[25..].copy_from_slice(b" GMT");
    out
}

fn two(out: &mut [u8], n: u64) {
    out[0] = b'0' + (n / 10 % 10) as u8;
    out[1] = b'0' + (n % 10) as u8;
}

/// Days since 1970-01-01 to (year, month 1..=12, day 1..=31), after Howard
/// Hinnant's `civil_from_days`.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        assert_eq!(&render(0), b"Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(&render(784_111_777), b"Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(&render(951_782_400), b"Tue, 29 Feb 2000 00:00:00 GMT");
        assert_eq!(&render(1_796_083_199), b"Mon, 30 Nov 2026 23:59:59 GMT");
    }

    #[test]
    fn cache_renders_when_the_second_changes() {
        let mut cache = DateCache::new();
        cache.update(UNIX_EPOCH + std::time::Duration::from_millis(784_111_777_900));
        assert_eq!(cache.date(), b"Sun, 06 Nov 1994 08:49:37 GMT");
        cache.update(UNIX_EPOCH + std::time::Duration::from_secs(784_111_778));
        assert_eq!(cache.fields(), b"Server: falconet\r\nDate: Sun, 06 Nov 1994 08:49:38 GMT\r\n");
        assert!(cache.fields().starts_with(SERVER_FIELD));
    }
}
