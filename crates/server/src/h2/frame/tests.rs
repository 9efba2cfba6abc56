//! The frame layer against hand-built frames, each case naming its
//! section of RFC 9113.

use super::encode::MAX_GOAWAY_DEBUG;
use super::*;
use proptest::prelude::*;

/// A frame's bytes: header, then payload.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let length = u32::try_from(payload.len()).unwrap();
    let mut out = FrameHeader { length, kind, flags, stream }.to_bytes().unwrap().to_vec();
    out.extend_from_slice(payload);
    out
}

/// Decodes the frame at the start of `bytes`, the rest its payload.
fn parse(bytes: &[u8], max: u32) -> Result<Frame<'_>, FrameError> {
    let (header, payload) = bytes.split_first_chunk::<HEADER_LEN>().unwrap();
    Frame::parse(FrameHeader::parse(header), payload, max)
}

fn decode(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Result<Frame<'_>, FrameError> {
    // The payload is borrowed, not the frame's bytes, so the result
    // can outlive them.
    let length = u32::try_from(payload.len()).unwrap();
    Frame::parse(FrameHeader { length, kind, flags, stream }, payload, MAX_FRAME_LEN)
}

/// Splits a buffer of frames into (header, payload) pairs.
fn frames(mut bytes: &[u8]) -> Vec<(FrameHeader, &[u8])> {
    let mut out = Vec::new();
    while let Some((header, rest)) = bytes.split_first_chunk::<HEADER_LEN>() {
        let header = FrameHeader::parse(header);
        let (payload, rest) = rest.split_at(header.length as usize);
        out.push((header, payload));
        bytes = rest;
    }
    assert!(bytes.is_empty());
    out
}

fn connection(code: ErrorCode, violation: Violation) -> FrameError {
    FrameError::connection(code, violation)
}

fn stream(id: u32, code: ErrorCode, violation: Violation) -> FrameError {
    FrameError::stream(id, code, violation)
}

const PROTOCOL: ErrorCode = ErrorCode::PROTOCOL_ERROR;
const FRAME_SIZE: ErrorCode = ErrorCode::FRAME_SIZE_ERROR;

#[test]
fn preface_is_the_24_bytes_of_rfc9113_3_4() {
    assert_eq!(PREFACE.len(), 24);
    assert_eq!(&PREFACE[..], b"\x50\x52\x49\x20\x2a\x20\x48\x54\x54\x50\x2f\x32\x2e\x30\x0d\x0a\x0d\x0a\x53\x4d\x0d\x0a\x0d\x0a");
}

#[test]
fn header_fields_and_reserved_bit_rfc9113_4_1() {
    let bytes = [0xab, 0xcd, 0xef, 0x42, 0x99, 0xff, 0xff, 0xff, 0xff];
    let header = FrameHeader::parse(&bytes);
    assert_eq!(
        header,
        FrameHeader { length: 0xab_cdef, kind: 0x42, flags: 0x99, stream: 0x7fff_ffff }
    );
    // Sent again, the reserved bit is clear.
    assert_eq!(header.to_bytes(), Ok([0xab, 0xcd, 0xef, 0x42, 0x99, 0x7f, 0xff, 0xff, 0xff]));
    // The length holds 24 bits: one more is refused, and nothing written.
    let max = FrameHeader { length: MAX_FRAME_LEN, ..header };
    assert_eq!(max.to_bytes().map(|b| b[..3].to_vec()), Ok(vec![0xff, 0xff, 0xff]));
    for length in [MAX_FRAME_LEN + 1, u32::MAX] {
        let over = FrameHeader { length, ..header };
        let too_long = EncodeError::TooLong { length: length as usize, max: 0xff_ffff };
        assert_eq!(over.to_bytes(), Err(too_long));
        let mut out = Vec::new();
        assert_eq!(over.encode(&mut out), Err(too_long));
        assert!(out.is_empty());
    }
    assert_eq!(
        FrameHeader::parse(&[0; 9]),
        FrameHeader { length: 0, kind: 0, flags: 0, stream: 0 }
    );
}

#[test]
fn length_against_max_frame_size_rfc9113_4_2() {
    let too_large = connection(FRAME_SIZE, Violation::TooLarge);
    for kind in [kind::DATA, kind::HEADERS, kind::CONTINUATION, 0xfa] {
        for (len, max, ok) in [
            (0, DEFAULT_MAX_FRAME_SIZE, true),
            (DEFAULT_MAX_FRAME_SIZE, DEFAULT_MAX_FRAME_SIZE, true),
            (DEFAULT_MAX_FRAME_SIZE + 1, DEFAULT_MAX_FRAME_SIZE, false),
            (MAX_FRAME_LEN, DEFAULT_MAX_FRAME_SIZE, false),
            (MAX_FRAME_LEN, MAX_FRAME_LEN, true),
        ] {
            let payload = vec![0; len as usize];
            let bytes = frame(kind, 0, 1, &payload);
            let header = FrameHeader::parse(bytes.first_chunk().unwrap());
            assert_eq!(header.check_length(max).is_ok(), ok, "{kind} {len} {max}");
            match parse(&bytes, max) {
                Ok(_) => assert!(ok),
                Err(e) => assert!(!ok && e == too_large, "{kind} {len} {max}: {e}"),
            }
        }
    }
    // Checked from the header alone: also when no payload was read.
    let header = FrameHeader { length: MAX_FRAME_LEN, kind: kind::DATA, flags: 0, stream: 1 };
    assert_eq!(Frame::parse(header, &[], DEFAULT_MAX_FRAME_SIZE), Err(too_large));
    // A payload that is not the header's length is refused.
    let header = FrameHeader { length: 4, kind: kind::DATA, flags: 0, stream: 1 };
    assert_eq!(
        Frame::parse(header, &[0; 3], DEFAULT_MAX_FRAME_SIZE),
        Err(connection(FRAME_SIZE, Violation::PayloadMismatch))
    );
}

#[test]
fn unknown_types_are_ignored_rfc9113_4_1_5_5() {
    for (flags, stream) in [(0, 0), (0xff, 0), (0xff, 7)] {
        assert_eq!(decode(0x0a, flags, stream, b"anything"), Ok(Frame::Unknown { kind: 0x0a }));
        assert_eq!(decode(0xff, flags, stream, b""), Ok(Frame::Unknown { kind: 0xff }));
    }
}

#[test]
fn undefined_flags_are_ignored_rfc9113_4_1() {
    // PING defines only ACK; DATA not END_HEADERS or PRIORITY.
    assert_eq!(
        decode(kind::PING, !flag::ACK, 0, &[1; 8]),
        Ok(Frame::Ping { ack: false, payload: [1; 8] })
    );
    assert_eq!(
        decode(kind::DATA, flag::END_HEADERS | flag::PRIORITY | 0x80, 1, b"ab"),
        Ok(Frame::Data { stream: 1, end_stream: false, data: b"ab", flow_len: 2 })
    );
    // RST_STREAM defines no flags.
    assert_eq!(
        decode(kind::RST_STREAM, 0xff, 3, &[0, 0, 0, 8]),
        Ok(Frame::RstStream { stream: 3, code: ErrorCode::CANCEL })
    );
}

#[test]
fn data_decodes_with_and_without_padding_rfc9113_6_1() {
    assert_eq!(
        decode(kind::DATA, flag::END_STREAM, 1, b"hello"),
        Ok(Frame::Data { stream: 1, end_stream: true, data: b"hello", flow_len: 5 })
    );
    assert_eq!(
        decode(kind::DATA, 0, 1, b""),
        Ok(Frame::Data { stream: 1, end_stream: false, data: b"", flow_len: 0 })
    );
    // Flow control counts the Pad Length and the padding.
    assert_eq!(
        decode(kind::DATA, flag::PADDED, 5, b"\x03hi\0\0\0"),
        Ok(Frame::Data { stream: 5, end_stream: false, data: b"hi", flow_len: 6 })
    );
    // All padding: the largest padding allowed.
    assert_eq!(
        decode(kind::DATA, flag::PADDED, 5, b"\x02\0\0"),
        Ok(Frame::Data { stream: 5, end_stream: false, data: b"", flow_len: 3 })
    );
    let payload = [&[255u8][..], &[0; 255]].concat();
    assert_eq!(
        decode(kind::DATA, flag::PADDED, 5, &payload),
        Ok(Frame::Data { stream: 5, end_stream: false, data: b"", flow_len: 256 })
    );
}

#[test]
fn data_padding_not_shorter_than_payload_rfc9113_6_1() {
    let error = Err(connection(PROTOCOL, Violation::Padding));
    assert_eq!(decode(kind::DATA, flag::PADDED, 1, b"\x01"), error);
    assert_eq!(decode(kind::DATA, flag::PADDED, 1, b"\x03\0\0"), error);
    assert_eq!(decode(kind::DATA, flag::PADDED, 1, b"\xffabc"), error);
    // No room for the Pad Length itself (§4.2).
    assert_eq!(
        decode(kind::DATA, flag::PADDED, 1, b""),
        Err(connection(FRAME_SIZE, Violation::TooShort))
    );
}

#[test]
fn stream_frames_on_stream_0_rfc9113_6_1_to_6_4_6_6_6_10() {
    let error = Err(connection(PROTOCOL, Violation::ZeroStream));
    assert_eq!(decode(kind::DATA, 0, 0, b"x"), error); // §6.1
    assert_eq!(decode(kind::HEADERS, flag::END_HEADERS, 0, b"\x82"), error); // §6.2
    assert_eq!(decode(kind::PRIORITY, 0, 0, &[0, 0, 0, 1, 15]), error); // §6.3
    assert_eq!(decode(kind::RST_STREAM, 0, 0, &[0; 4]), error); // §6.4
    assert_eq!(decode(kind::PUSH_PROMISE, 0, 0, &[0, 0, 0, 2]), error); // §6.6
    assert_eq!(decode(kind::CONTINUATION, 0, 0, b"\x82"), error); // §6.10
}

#[test]
fn connection_frames_on_a_stream_rfc9113_6_5_6_7_6_8() {
    let error = Err(connection(PROTOCOL, Violation::NonZeroStream));
    assert_eq!(decode(kind::SETTINGS, 0, 1, b""), error); // §6.5
    assert_eq!(decode(kind::SETTINGS, flag::ACK, 1, b""), error);
    assert_eq!(decode(kind::PING, 0, 1, &[0; 8]), error); // §6.7
    assert_eq!(decode(kind::GOAWAY, 0, 1, &[0; 8]), error); // §6.8
}

#[test]
fn headers_decode_rfc9113_6_2() {
    assert_eq!(
        decode(kind::HEADERS, flag::END_HEADERS | flag::END_STREAM, 1, b"\x82\x86"),
        Ok(Frame::Headers {
            stream: 1,
            end_stream: true,
            end_headers: true,
            priority: None,
            fragment: b"\x82\x86",
        })
    );
    // Padded with priority: Pad Length, the 5 priority bytes, the
    // fragment, the padding.
    let payload = b"\x02\x80\x00\x00\x03\x0f\x82\0\0";
    assert_eq!(
        decode(kind::HEADERS, flag::PADDED | flag::PRIORITY, 5, payload),
        Ok(Frame::Headers {
            stream: 5,
            end_stream: false,
            end_headers: false,
            priority: Some(Priority { dependency: 3, exclusive: true, weight: 16 }),
            fragment: b"\x82",
        })
    );
    // Everything after the fields may be padding.
    assert_eq!(
        decode(kind::HEADERS, flag::PADDED | flag::PRIORITY, 5, b"\x01\0\0\0\0\xff\0"),
        Ok(Frame::Headers {
            stream: 5,
            end_stream: false,
            end_headers: false,
            priority: Some(Priority { dependency: 0, exclusive: false, weight: 256 }),
            fragment: b"",
        })
    );
}

#[test]
fn headers_padding_beyond_the_fragment_rfc9113_6_2() {
    let error = Err(connection(PROTOCOL, Violation::Padding));
    assert_eq!(decode(kind::HEADERS, flag::PADDED, 1, b"\x01"), error);
    assert_eq!(decode(kind::HEADERS, flag::PADDED, 1, b"\x05\x82\0\0\0"), error);
    // The priority fields are not room for padding.
    let payload = b"\x02\0\0\0\0\x0f\0";
    assert_eq!(decode(kind::HEADERS, flag::PADDED | flag::PRIORITY, 1, payload), error);
}

#[test]
fn headers_too_short_for_their_fields_rfc9113_4_2() {
    let error = Err(connection(FRAME_SIZE, Violation::TooShort));
    assert_eq!(decode(kind::HEADERS, flag::PADDED, 1, b""), error);
    assert_eq!(decode(kind::HEADERS, flag::PRIORITY, 1, b"\0\0\0\0"), error);
    assert_eq!(decode(kind::HEADERS, flag::PRIORITY | flag::PADDED, 1, b"\0\0\0\0\0"), error);
}

#[test]
fn headers_depending_on_their_stream_rfc9113_5_3_1() {
    // A stream error by §5.3.1, escalated to the connection (§5.4.1)
    // because the fragment would go undecoded (§4.3).
    assert_eq!(
        decode(kind::HEADERS, flag::PRIORITY | flag::END_HEADERS, 3, b"\0\0\0\x03\x0f\x82"),
        Err(connection(PROTOCOL, Violation::SelfDependency))
    );
    // The exclusive bit is not part of the id.
    assert_eq!(
        decode(kind::HEADERS, flag::PRIORITY, 3, b"\x80\0\0\x03\x0f"),
        Err(connection(PROTOCOL, Violation::SelfDependency))
    );
}

#[test]
fn priority_decodes_rfc9113_6_3() {
    assert_eq!(
        decode(kind::PRIORITY, 0, 3, &[0, 0, 0, 1, 0]),
        Ok(Frame::Priority {
            stream: 3,
            priority: Priority { dependency: 1, exclusive: false, weight: 1 },
        })
    );
}

#[test]
fn priority_length_other_than_5_rfc9113_6_3() {
    for len in [0, 4, 6, 100] {
        assert_eq!(
            decode(kind::PRIORITY, 0, 7, &vec![0; len]),
            Err(stream(7, FRAME_SIZE, Violation::BadLength)),
            "{len}"
        );
    }
}

#[test]
fn priority_depending_on_its_stream_rfc9113_5_3_1() {
    assert_eq!(
        decode(kind::PRIORITY, 0, 7, &[0x80, 0, 0, 7, 0]),
        Err(stream(7, PROTOCOL, Violation::SelfDependency))
    );
}

#[test]
fn rst_stream_length_other_than_4_rfc9113_6_4() {
    for len in [0, 3, 5, 8] {
        assert_eq!(
            decode(kind::RST_STREAM, 0, 1, &vec![0; len]),
            Err(connection(FRAME_SIZE, Violation::BadLength)),
            "{len}"
        );
    }
    // An unknown code is kept (§7).
    assert_eq!(
        decode(kind::RST_STREAM, 0, 1, &[0xde, 0xad, 0xbe, 0xef]),
        Ok(Frame::RstStream { stream: 1, code: ErrorCode::from(0xdead_beef) })
    );
}

#[test]
fn settings_decode_rfc9113_6_5() {
    let payload = [
        0, 1, 0, 0, 0x10, 0, // HEADER_TABLE_SIZE 4096
        0, 2, 0, 0, 0, 0, // ENABLE_PUSH 0
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // unknown: any value
        0, 5, 0, 0xff, 0xff, 0xff, // MAX_FRAME_SIZE 2^24-1
    ];
    let Ok(Frame::Settings { ack: false, params }) = decode(kind::SETTINGS, 0, 0, &payload) else {
        panic!("not SETTINGS");
    };
    assert_eq!(params.len(), 4);
    assert_eq!(
        params.collect::<Vec<_>>(),
        [(1, 4096), (2, 0), (0xffff, u32::MAX), (5, MAX_FRAME_LEN)]
    );
    let Ok(Frame::Settings { ack: true, params }) = decode(kind::SETTINGS, flag::ACK, 0, b"")
    else {
        panic!("not a SETTINGS ACK");
    };
    assert_eq!(params.count(), 0);
}

#[test]
fn settings_length_not_a_multiple_of_6_rfc9113_6_5() {
    for len in [1, 5, 7, 13] {
        assert_eq!(
            decode(kind::SETTINGS, 0, 0, &vec![0; len]),
            Err(connection(FRAME_SIZE, Violation::BadLength)),
            "{len}"
        );
    }
}

#[test]
fn settings_ack_with_a_payload_rfc9113_6_5() {
    for len in [1, 6, 12] {
        assert_eq!(
            decode(kind::SETTINGS, flag::ACK, 0, &vec![0; len]),
            Err(connection(FRAME_SIZE, Violation::BadLength)),
            "{len}"
        );
    }
}

#[test]
fn settings_values_out_of_range_rfc9113_6_5_2() {
    let param = |id: u16, value: u32| {
        let mut out = id.to_be_bytes().to_vec();
        out.extend_from_slice(&value.to_be_bytes());
        out
    };
    let cases = [
        (setting::ENABLE_PUSH, 0, None),
        (setting::ENABLE_PUSH, 1, None),
        (setting::ENABLE_PUSH, 2, Some(PROTOCOL)),
        (setting::ENABLE_PUSH, u32::MAX, Some(PROTOCOL)),
        (setting::INITIAL_WINDOW_SIZE, 0, None),
        (setting::INITIAL_WINDOW_SIZE, MAX_WINDOW_SIZE, None),
        (setting::INITIAL_WINDOW_SIZE, MAX_WINDOW_SIZE + 1, Some(ErrorCode::FLOW_CONTROL_ERROR)),
        (setting::MAX_FRAME_SIZE, DEFAULT_MAX_FRAME_SIZE - 1, Some(PROTOCOL)),
        (setting::MAX_FRAME_SIZE, DEFAULT_MAX_FRAME_SIZE, None),
        (setting::MAX_FRAME_SIZE, MAX_FRAME_LEN, None),
        (setting::MAX_FRAME_SIZE, MAX_FRAME_LEN + 1, Some(PROTOCOL)),
        (setting::MAX_FRAME_SIZE, 0, Some(PROTOCOL)),
        (setting::HEADER_TABLE_SIZE, u32::MAX, None),
        (setting::MAX_CONCURRENT_STREAMS, 0, None),
        (setting::MAX_HEADER_LIST_SIZE, u32::MAX, None),
        (0, u32::MAX, None),
        (0x8, 7, None),
    ];
    for (id, value, code) in cases {
        let expected = match code {
            None => Ok(()),
            Some(code) => Err(connection(code, Violation::SettingValue(id))),
        };
        assert_eq!(Settings::default().apply(id, value), expected, "{id} {value}");
        // A bad value anywhere in the frame fails it.
        let payload = [param(setting::HEADER_TABLE_SIZE, 0), param(id, value)].concat();
        let decoded = decode(kind::SETTINGS, 0, 0, &payload).map(|_| ());
        assert_eq!(decoded, expected, "{id} {value} in a frame");
    }
}

#[test]
fn settings_initial_values_rfc9113_6_5_2() {
    let s = Settings::default();
    assert_eq!(s.header_table_size, 4096);
    assert!(s.enable_push);
    assert_eq!(s.max_concurrent_streams, None);
    assert_eq!(s.initial_window_size, 65_535);
    assert_eq!(s.max_frame_size, 16_384);
    assert_eq!(s.max_header_list_size, None);
}

#[test]
fn settings_apply_records_each_parameter() {
    let mut s = Settings::default();
    for (id, value) in
        [(1, 0), (2, 0), (3, 100), (4, MAX_WINDOW_SIZE), (5, MAX_FRAME_LEN), (6, 8192), (9, 1)]
    {
        s.apply(id, value).unwrap();
    }
    assert_eq!(
        s,
        Settings {
            header_table_size: 0,
            enable_push: false,
            max_concurrent_streams: Some(100),
            initial_window_size: MAX_WINDOW_SIZE,
            max_frame_size: MAX_FRAME_LEN,
            max_header_list_size: Some(8192),
        }
    );
    // A refused value changes nothing.
    let before = s;
    assert!(s.apply(setting::MAX_FRAME_SIZE, 1).is_err());
    assert_eq!(s, before);
}

#[test]
fn push_promise_from_a_client_rfc9113_8_4() {
    for flags in [0, flag::END_HEADERS, flag::PADDED] {
        assert_eq!(
            decode(kind::PUSH_PROMISE, flags, 1, &[0, 0, 0, 2, 0x82]),
            Err(connection(PROTOCOL, Violation::PushPromise))
        );
    }
}

#[test]
fn ping_length_other_than_8_rfc9113_6_7() {
    for len in [0, 7, 9, 16] {
        assert_eq!(
            decode(kind::PING, 0, 0, &vec![0; len]),
            Err(connection(FRAME_SIZE, Violation::BadLength)),
            "{len}"
        );
    }
    assert_eq!(
        decode(kind::PING, flag::ACK, 0, b"12345678"),
        Ok(Frame::Ping { ack: true, payload: *b"12345678" })
    );
}

#[test]
fn goaway_shorter_than_8_rfc9113_6_8() {
    for len in [0, 4, 7] {
        assert_eq!(
            decode(kind::GOAWAY, 0, 0, &vec![0; len]),
            Err(connection(FRAME_SIZE, Violation::TooShort)),
            "{len}"
        );
    }
    // The reserved bit of the last stream id is ignored; an unknown
    // code is kept (§7).
    assert_eq!(
        decode(kind::GOAWAY, 0, 0, b"\xff\xff\xff\xff\0\0\0\x2adebug"),
        Ok(Frame::GoAway {
            last_stream: 0x7fff_ffff,
            code: ErrorCode::from(0x2a),
            debug: b"debug",
        })
    );
}

#[test]
fn window_update_length_other_than_4_rfc9113_6_9() {
    for stream_id in [0, 1] {
        for len in [0, 3, 5, 8] {
            assert_eq!(
                decode(kind::WINDOW_UPDATE, 0, stream_id, &vec![1; len]),
                Err(connection(FRAME_SIZE, Violation::BadLength)),
                "{stream_id} {len}"
            );
        }
    }
}

#[test]
fn window_update_increment_of_0_rfc9113_6_9() {
    let zero = 0u32.to_be_bytes();
    assert_eq!(
        decode(kind::WINDOW_UPDATE, 0, 0, &zero),
        Err(connection(PROTOCOL, Violation::ZeroIncrement))
    );
    assert_eq!(
        decode(kind::WINDOW_UPDATE, 0, 9, &zero),
        Err(stream(9, PROTOCOL, Violation::ZeroIncrement))
    );
    // The reserved bit is ignored (§6.9): 2^31 is an increment of 0.
    assert_eq!(
        decode(kind::WINDOW_UPDATE, 0, 9, &(1u32 << 31).to_be_bytes()),
        Err(stream(9, PROTOCOL, Violation::ZeroIncrement))
    );
}

#[test]
fn window_update_increments_rfc9113_6_9() {
    for (wire, increment) in [(1, 1), (MAX_WINDOW_SIZE, MAX_WINDOW_SIZE), ((1 << 31) + 1, 1)] {
        for stream_id in [0, 1] {
            assert_eq!(
                decode(kind::WINDOW_UPDATE, 0, stream_id, &u32::to_be_bytes(wire)),
                Ok(Frame::WindowUpdate { stream: stream_id, increment }),
                "{wire}"
            );
        }
    }
}

#[test]
fn continuation_decodes_rfc9113_6_10() {
    assert_eq!(
        decode(kind::CONTINUATION, flag::END_HEADERS | flag::PADDED, 1, b"\x01\x82"),
        Ok(Frame::Continuation { stream: 1, end_headers: true, fragment: b"\x01\x82" })
    );
}

#[test]
fn error_codes_rfc9113_7() {
    let named = [
        (ErrorCode::NO_ERROR, 0x0, "NO_ERROR"),
        (ErrorCode::PROTOCOL_ERROR, 0x1, "PROTOCOL_ERROR"),
        (ErrorCode::INTERNAL_ERROR, 0x2, "INTERNAL_ERROR"),
        (ErrorCode::FLOW_CONTROL_ERROR, 0x3, "FLOW_CONTROL_ERROR"),
        (ErrorCode::SETTINGS_TIMEOUT, 0x4, "SETTINGS_TIMEOUT"),
        (ErrorCode::STREAM_CLOSED, 0x5, "STREAM_CLOSED"),
        (ErrorCode::FRAME_SIZE_ERROR, 0x6, "FRAME_SIZE_ERROR"),
        (ErrorCode::REFUSED_STREAM, 0x7, "REFUSED_STREAM"),
        (ErrorCode::CANCEL, 0x8, "CANCEL"),
        (ErrorCode::COMPRESSION_ERROR, 0x9, "COMPRESSION_ERROR"),
        (ErrorCode::CONNECT_ERROR, 0xa, "CONNECT_ERROR"),
        (ErrorCode::ENHANCE_YOUR_CALM, 0xb, "ENHANCE_YOUR_CALM"),
        (ErrorCode::INADEQUATE_SECURITY, 0xc, "INADEQUATE_SECURITY"),
        (ErrorCode::HTTP_1_1_REQUIRED, 0xd, "HTTP_1_1_REQUIRED"),
    ];
    for (code, value, name) in named {
        assert_eq!(code.value(), value);
        assert_eq!(ErrorCode::from(value), code);
        assert_eq!(code.name(), Some(name));
        assert_eq!(code.to_string(), name);
    }
    // Unknown codes: kept, named by value.
    let unknown = ErrorCode::from(0xe);
    assert_eq!((unknown.value(), unknown.name()), (0xe, None));
    assert_eq!(u32::from(ErrorCode::from(u32::MAX)), u32::MAX);
    assert_eq!(format!("{unknown:?}"), "unknown error code 0xe");
}

#[test]
fn errors_say_scope_code_and_rule() {
    let e = stream(7, PROTOCOL, Violation::ZeroIncrement);
    assert_eq!(
        (e.scope(), e.code(), e.violation()),
        (ErrorScope::Stream(7), PROTOCOL, Violation::ZeroIncrement)
    );
    assert!(!e.is_connection());
    assert_eq!(
        e.to_string(),
        "stream 7 error PROTOCOL_ERROR: WINDOW_UPDATE increment of 0 (RFC 9113 §6.9)"
    );
    let e = connection(ErrorCode::FLOW_CONTROL_ERROR, Violation::SettingValue(4));
    assert!(e.is_connection());
    assert!(e.to_string().ends_with("(identifier 0x4)"), "{e}");
}

#[test]
fn settings_round_trip() {
    let mut out = Vec::new();
    encode_settings(&mut out, &[(setting::MAX_CONCURRENT_STREAMS, 100), (0x42, 7)]).unwrap();
    assert_eq!(out.len(), HEADER_LEN + 12);
    let Ok(Frame::Settings { ack: false, params }) = parse(&out, DEFAULT_MAX_FRAME_SIZE) else {
        panic!("not SETTINGS");
    };
    assert_eq!(params.collect::<Vec<_>>(), [(3, 100), (0x42, 7)]);

    out.clear();
    encode_settings(&mut out, &[]).unwrap();
    assert_eq!(out, [0, 0, 0, 4, 0, 0, 0, 0, 0]);
    out.clear();
    encode_settings_ack(&mut out);
    assert_eq!(out, [0, 0, 0, 4, 1, 0, 0, 0, 0]);
    assert!(matches!(
        parse(&out, DEFAULT_MAX_FRAME_SIZE),
        Ok(Frame::Settings { ack: true, params }) if params.len() == 0
    ));
}

#[test]
fn settings_changes_round_trip() {
    let ours = Settings {
        enable_push: false,
        max_concurrent_streams: Some(128),
        initial_window_size: 1 << 20,
        max_frame_size: 1 << 16,
        ..Settings::INITIAL
    };
    assert_eq!(
        ours.changes(&Settings::INITIAL).collect::<Vec<_>>(),
        [(2, 0), (3, 128), (4, 1 << 20), (5, 1 << 16)]
    );
    let mut out = Vec::new();
    ours.encode_changes(&Settings::INITIAL, &mut out);
    let Ok(Frame::Settings { ack: false, params }) = parse(&out, DEFAULT_MAX_FRAME_SIZE) else {
        panic!("not SETTINGS");
    };
    let mut peer = Settings::INITIAL;
    for (id, value) in params {
        peer.apply(id, value).unwrap();
    }
    assert_eq!(peer, ours);
    // No change: an empty SETTINGS frame, still sent (§3.4).
    out.clear();
    Settings::INITIAL.encode_changes(&Settings::INITIAL, &mut out);
    assert_eq!(out, [0, 0, 0, 4, 0, 0, 0, 0, 0]);
    // Back to unlimited: the largest value.
    assert_eq!(Settings::INITIAL.changes(&ours).nth(1), Some((3, u32::MAX)));
}

#[test]
fn ping_round_trip() {
    for ack in [false, true] {
        let mut out = Vec::new();
        encode_ping(&mut out, *b"\0\x01\x02\x03\x04\x05\x06\x07", ack);
        assert_eq!(
            parse(&out, DEFAULT_MAX_FRAME_SIZE),
            Ok(Frame::Ping { ack, payload: *b"\0\x01\x02\x03\x04\x05\x06\x07" })
        );
    }
}

#[test]
fn goaway_round_trip() {
    let mut out = Vec::new();
    encode_goaway(&mut out, 41, ErrorCode::ENHANCE_YOUR_CALM, b"too many resets");
    assert_eq!(
        parse(&out, DEFAULT_MAX_FRAME_SIZE),
        Ok(Frame::GoAway {
            last_stream: 41,
            code: ErrorCode::ENHANCE_YOUR_CALM,
            debug: b"too many resets",
        })
    );
    // Debug data is cut so the frame fits the smallest max frame size;
    // the reserved bit of the id is clear.
    out.clear();
    encode_goaway(&mut out, u32::MAX, ErrorCode::NO_ERROR, &[b'x'; 20_000]);
    assert_eq!(out.len(), HEADER_LEN + DEFAULT_MAX_FRAME_SIZE as usize);
    assert_eq!(&out[HEADER_LEN..HEADER_LEN + 4], [0x7f, 0xff, 0xff, 0xff]);
    assert!(matches!(
        parse(&out, DEFAULT_MAX_FRAME_SIZE),
        Ok(Frame::GoAway { last_stream: 0x7fff_ffff, code: ErrorCode::NO_ERROR, debug })
            if debug.len() == MAX_GOAWAY_DEBUG
    ));
}

#[test]
fn window_update_round_trip() {
    for (stream_id, increment) in [(0, 1), (1, 1), (3, MAX_WINDOW_SIZE), (0, MAX_WINDOW_SIZE)] {
        let mut out = Vec::new();
        encode_window_update(&mut out, stream_id, increment).unwrap();
        assert_eq!(
            parse(&out, DEFAULT_MAX_FRAME_SIZE),
            Ok(Frame::WindowUpdate { stream: stream_id, increment })
        );
    }
}

#[test]
fn rst_stream_round_trip() {
    for code in [ErrorCode::NO_ERROR, ErrorCode::REFUSED_STREAM, ErrorCode::from(0x77)] {
        let mut out = Vec::new();
        encode_rst_stream(&mut out, 0x7fff_ffff, code);
        assert_eq!(
            parse(&out, DEFAULT_MAX_FRAME_SIZE),
            Ok(Frame::RstStream { stream: 0x7fff_ffff, code })
        );
    }
}

/// Values a frame cannot carry are refused with a typed error, and
/// nothing is written: never a frame the peer would take for another.
#[test]
fn encoders_refuse_what_a_frame_cannot_carry() {
    let mut out = Vec::new();
    for increment in [0, MAX_WINDOW_SIZE + 1, u32::MAX] {
        assert_eq!(
            encode_window_update(&mut out, 1, increment),
            Err(EncodeError::WindowIncrement(increment))
        );
    }
    assert_eq!(
        data_header(1, MAX_FRAME_LEN + 1, true),
        Err(EncodeError::TooLong { length: 1 << 24, max: MAX_FRAME_LEN as usize })
    );
    let most = vec![(setting::MAX_CONCURRENT_STREAMS, 1); DEFAULT_MAX_FRAME_SIZE as usize / 6];
    let one_more = [&most[..], &[(setting::MAX_CONCURRENT_STREAMS, 1)]].concat();
    assert_eq!(
        encode_settings(&mut out, &one_more),
        Err(EncodeError::TooLong { length: 16_386, max: 16_384 })
    );
    assert!(out.is_empty(), "a refused frame wrote {} bytes", out.len());
    // The edges themselves are frames.
    encode_window_update(&mut out, 1, MAX_WINDOW_SIZE).unwrap();
    encode_window_update(&mut out, 0, 1).unwrap();
    encode_settings(&mut out, &most).unwrap();
    assert_eq!(out.len(), 2 * (HEADER_LEN + 4) + HEADER_LEN + 16_380);
    assert!(EncodeError::WindowIncrement(0).to_string().contains("1..=2^31-1"));
}

#[test]
fn data_header_round_trip() {
    for (length, end_stream) in [(0, true), (1, false), (DEFAULT_MAX_FRAME_SIZE, true)] {
        let mut out = data_header(7, length, end_stream).unwrap().to_vec();
        out.extend((0..length).map(|i| i as u8));
        assert_eq!(
            parse(&out, DEFAULT_MAX_FRAME_SIZE),
            Ok(Frame::Data { stream: 7, end_stream, data: &out[HEADER_LEN..], flow_len: length })
        );
    }
    let header = FrameHeader::parse(&data_header(1, MAX_FRAME_LEN, false).unwrap());
    assert_eq!(header.length, MAX_FRAME_LEN);
}

/// Decodes HEADERS + CONTINUATION frames back into the block, checking
/// the flags and the stream of each.
fn reassemble(out: &[u8], stream_id: u32, end_stream: bool, max: u32) -> (Vec<u8>, usize) {
    let frames = frames(out);
    let mut block = Vec::new();
    for (i, &(header, payload)) in frames.iter().enumerate() {
        let last = i + 1 == frames.len();
        match Frame::parse(header, payload, max).unwrap() {
            Frame::Headers { stream: s, end_stream: e, end_headers, priority: None, fragment }
                if i == 0 =>
            {
                assert_eq!((s, e, end_headers), (stream_id, end_stream, last));
                block.extend_from_slice(fragment);
            }
            Frame::Continuation { stream: s, end_headers, fragment } if i > 0 => {
                assert_eq!((s, end_headers), (stream_id, last));
                block.extend_from_slice(fragment);
            }
            other => panic!("frame {i}: {other:?}"),
        }
    }
    (block, frames.len())
}

#[test]
fn headers_split_into_continuations_rfc9113_6_10() {
    let max = DEFAULT_MAX_FRAME_SIZE;
    let m = max as usize;
    for (len, count) in [(0, 1), (1, 1), (m, 1), (m + 1, 2), (2 * m, 2), (3 * m + 5, 4)] {
        for end_stream in [false, true] {
            let block: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let mut out = Vec::new();
            encode_headers(&mut out, 3, &block, end_stream, max);
            let (decoded, frames) = reassemble(&out, 3, end_stream, max);
            assert_eq!((decoded == block, frames), (true, count), "{len}");
        }
    }
    // An invalid max frame size is taken within range, never 0.
    let mut out = Vec::new();
    encode_headers(&mut out, 1, &[0; 20_000], false, 0);
    assert_eq!(reassemble(&out, 1, false, DEFAULT_MAX_FRAME_SIZE).1, 2);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any header and payload: a frame or an error, never a panic, and
    /// a frame's slices lie within the payload.
    #[test]
    fn arbitrary_frames_are_a_verdict(
        kind in prop_oneof![0u8..=9, any::<u8>()],
        flags in any::<u8>(),
        stream_id in prop_oneof![Just(0u32), 1u32..4, any::<u32>()],
        payload in proptest::collection::vec(any::<u8>(), 0..64),
        max in prop_oneof![Just(DEFAULT_MAX_FRAME_SIZE), 0u32..64],
    ) {
        let length = u32::try_from(payload.len()).unwrap();
        let header = FrameHeader { length, kind, flags, stream: stream_id & !RESERVED_BIT };
        match Frame::parse(header, &payload, max) {
            Ok(Frame::Data { data, flow_len, .. }) => {
                prop_assert!(data.len() <= flow_len as usize);
                prop_assert_eq!(flow_len, length);
            }
            Ok(Frame::Headers { fragment, .. } | Frame::Continuation { fragment, .. }) => {
                prop_assert!(fragment.len() <= payload.len());
            }
            Ok(Frame::Settings { params, .. }) => {
                let mut s = Settings::INITIAL;
                for (id, value) in params {
                    prop_assert!(s.apply(id, value).is_ok());
                }
            }
            Ok(Frame::WindowUpdate { increment, .. }) => {
                prop_assert!((1..=MAX_WINDOW_SIZE).contains(&increment));
            }
            Ok(_) => {}
            Err(e) => {
                if let ErrorScope::Stream(id) = e.scope() {
                    prop_assert_eq!(id, header.stream);
                    prop_assert!(id != 0);
                }
            }
        }
    }

    /// Random bytes read as a stream of frames never panic.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let mut rest = &bytes[..];
        while let Some((header, after)) = rest.split_first_chunk::<HEADER_LEN>() {
            let header = FrameHeader::parse(header);
            let payload = after.get(..header.length as usize).unwrap_or(after);
            let _ = Frame::parse(header, payload, DEFAULT_MAX_FRAME_SIZE);
            rest = &after[payload.len()..];
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any block, any max frame size: the frames reassemble to it.
    #[test]
    fn headers_reassemble(
        block in proptest::collection::vec(any::<u8>(), 0..40_000),
        max in DEFAULT_MAX_FRAME_SIZE..=DEFAULT_MAX_FRAME_SIZE + 100,
        end_stream in any::<bool>(),
        stream_id in 1u32..=MAX_WINDOW_SIZE,
    ) {
        let mut out = Vec::new();
        encode_headers(&mut out, stream_id, &block, end_stream, max);
        let (decoded, frames) = reassemble(&out, stream_id, end_stream, max);
        prop_assert_eq!(decoded, block.clone());
        prop_assert_eq!(frames, block.len().div_ceil(max as usize).max(1));
    }
}
