//! `Server::bind` checks every option before it binds anything, and
//! refuses a bad one with a typed `OptionsError`: each option at the
//! edges of its range (0, the bounds, one past them).

use std::time::Duration;

use falconet_server::{
    DEFAULT_MIN_REQUEST_BODY_RATE, DEFAULT_MIN_RESPONSE_RATE, DEFAULT_RESPONSE_TIMEOUT,
    MAX_CONNECTIONS, MAX_HEAD, MAX_HEADERS_LIMIT, MAX_POOL_BYTES, MAX_TIMEOUT, MAX_WORKERS,
    MIN_POOL_BYTES, MIN_REQUEST_LINE, MIN_TIMEOUT, MinDataRate, Options, OptionsError, Server,
    ServerError, hello::Hello,
};

/// Binds with `options`, expecting a refusal; returns its reason.
fn refused(options: Options) -> OptionsError {
    match Server::bind("127.0.0.1:0", options, Hello) {
        Err(ServerError::Options(error)) => error,
        Err(other) => panic!("refused, but not for its options: {other:?}"),
        Ok(server) => panic!("bound with invalid options: {server:?}"),
    }
}

/// Binds with `options`, which must be valid (the server is not started).
fn accepted(options: Options) {
    if let Err(error) = Server::bind("127.0.0.1:0", options.clone(), Hello) {
        panic!("{options:?} refused: {error}");
    }
}

/// One worker, so that a test binds one listener, not one per CPU.
fn one() -> Options {
    Options::new().workers(1)
}

#[test]
fn workers_must_be_1_to_the_maximum() {
    assert_eq!(refused(Options::new().workers(0)), OptionsError::Workers(0));
    accepted(Options::new().workers(1));
    accepted(Options::new().workers(MAX_WORKERS));
    assert_eq!(
        refused(Options::new().workers(MAX_WORKERS + 1)),
        OptionsError::Workers(MAX_WORKERS + 1)
    );
}

#[test]
fn max_connections_must_be_1_to_the_maximum() {
    assert_eq!(refused(one().max_connections(0)), OptionsError::MaxConnections(0));
    accepted(one().max_connections(1));
    accepted(one().max_connections(MAX_CONNECTIONS));
    assert_eq!(
        refused(one().max_connections(MAX_CONNECTIONS + 1)),
        OptionsError::MaxConnections(MAX_CONNECTIONS + 1)
    );
}

#[test]
fn the_request_line_limit_is_from_its_minimum_to_max_head() {
    assert_eq!(refused(one().max_request_line(0)), OptionsError::RequestLine(0));
    let below = MIN_REQUEST_LINE - 1;
    assert_eq!(refused(one().max_request_line(below)), OptionsError::RequestLine(below));
    accepted(one().max_request_line(MIN_REQUEST_LINE));
    accepted(one().max_head(4096).max_request_line(4096));
    assert_eq!(
        refused(one().max_head(4096).max_request_line(4097)),
        OptionsError::RequestLine(4097)
    );
}

#[test]
fn the_head_limit_is_at_most_its_maximum() {
    // A head limit below the request line's is the request line's error.
    assert_eq!(
        refused(one().max_request_line(MIN_REQUEST_LINE).max_head(0)),
        OptionsError::RequestLine(MIN_REQUEST_LINE)
    );
    accepted(one().max_head(MAX_HEAD));
    assert_eq!(refused(one().max_head(MAX_HEAD + 1)), OptionsError::Head(MAX_HEAD + 1));
}

#[test]
fn max_headers_must_be_1_to_the_parser_limit() {
    assert_eq!(refused(one().max_headers(0)), OptionsError::Headers(0));
    accepted(one().max_headers(1));
    accepted(one().max_headers(MAX_HEADERS_LIMIT));
    assert_eq!(
        refused(one().max_headers(MAX_HEADERS_LIMIT + 1)),
        OptionsError::Headers(MAX_HEADERS_LIMIT + 1)
    );
}

#[test]
fn every_timeout_is_from_the_minimum_to_the_maximum() {
    type Setter = fn(Options, Duration) -> Options;
    let setters: [(Setter, &str); 6] = [
        (Options::header_timeout, "header_timeout"),
        (Options::io_timeout, "io_timeout"),
        (|options, timeout| options.response_timeout(Some(timeout)), "response_timeout"),
        (Options::keep_alive_timeout, "keep_alive_timeout"),
        (Options::linger_timeout, "linger_timeout"),
        (Options::shutdown_timeout, "shutdown_timeout"),
    ];
    let nano = Duration::from_nanos(1);
    for (set, option) in setters {
        for bad in [Duration::ZERO, MIN_TIMEOUT - nano, MAX_TIMEOUT + nano, Duration::MAX] {
            let error = refused(set(one(), bad));
            assert_eq!(error, OptionsError::Timeout { option, value: bad });
            assert!(error.to_string().starts_with(&format!("{option} must be ")), "{error}");
        }
        accepted(set(one(), MIN_TIMEOUT));
        accepted(set(one(), MAX_TIMEOUT));
    }
}

#[test]
fn the_response_timeout_may_be_off_and_defaults_to_its_constant() {
    accepted(one().response_timeout(None));
    assert_eq!(Options::new(), Options::new().response_timeout(Some(DEFAULT_RESPONSE_TIMEOUT)));
}

/// Both least rates: at least 1 byte a second, a grace in the timeouts'
/// range, `None` for off, the default constant by default, and an error
/// that names the setting.
#[test]
fn the_min_rates_are_at_least_1_byte_a_second_over_a_valid_period() {
    type Setter = fn(Options, Option<MinDataRate>) -> Options;
    type Error = fn(MinDataRate) -> OptionsError;
    let cases: [(Setter, MinDataRate, Error, &str); 2] = [
        (
            Options::min_response_rate,
            DEFAULT_MIN_RESPONSE_RATE,
            OptionsError::MinResponseRate,
            "min_response_rate",
        ),
        (
            Options::min_request_body_rate,
            DEFAULT_MIN_REQUEST_BODY_RATE,
            OptionsError::MinRequestBodyRate,
            "min_request_body_rate",
        ),
    ];
    for (set, default, error, name) in cases {
        let rate = |bytes, grace| set(one(), Some(MinDataRate::new(bytes, grace)));
        let second = Duration::from_secs(1);
        let zero = MinDataRate::new(0, second);
        assert_eq!(refused(rate(0, second)), error(zero));
        accepted(rate(1, second));
        accepted(rate(u32::MAX, second));
        let nano = Duration::from_nanos(1);
        for bad in [Duration::ZERO, MIN_TIMEOUT - nano, MAX_TIMEOUT + nano, Duration::MAX] {
            let option = if name == "min_response_rate" {
                "min_response_rate's grace"
            } else {
                "min_request_body_rate's grace"
            };
            assert_eq!(refused(rate(240, bad)), OptionsError::Timeout { option, value: bad });
        }
        accepted(rate(240, MIN_TIMEOUT));
        accepted(rate(u32::MAX, MAX_TIMEOUT));
        accepted(set(one(), None));
        assert_eq!(Options::new(), set(Options::new(), Some(default)));
        assert!(refused(rate(0, second)).to_string().contains(name));
    }
    // Each rate's error is its own.
    let zero = MinDataRate::new(0, Duration::from_secs(1));
    let both = one().min_response_rate(Some(zero)).min_request_body_rate(Some(zero));
    assert_eq!(refused(both), OptionsError::MinResponseRate(zero));
}

#[test]
fn pending_output_must_be_at_least_1() {
    assert_eq!(refused(one().max_pending_output(0)), OptionsError::PendingOutput(0));
    accepted(one().max_pending_output(1));
    accepted(one().max_pending_output(usize::MAX));
}

#[test]
fn the_pool_bound_is_from_one_slab_to_the_maximum() {
    assert_eq!(refused(one().max_pool_bytes(0)), OptionsError::PoolBytes(0));
    let below = MIN_POOL_BYTES - 1;
    assert_eq!(refused(one().max_pool_bytes(below)), OptionsError::PoolBytes(below));
    accepted(one().max_pool_bytes(MIN_POOL_BYTES));
    accepted(one().max_pool_bytes(MAX_POOL_BYTES));
    assert_eq!(
        refused(one().max_pool_bytes(MAX_POOL_BYTES + 1)),
        OptionsError::PoolBytes(MAX_POOL_BYTES + 1)
    );
}

#[test]
fn any_body_limit_is_valid() {
    accepted(one().max_body(0));
    accepted(one().max_body(u64::MAX));
}

#[test]
fn options_are_checked_before_the_address() {
    // The address cannot be resolved; the options are still the answer.
    let result = Server::bind("not an address", Options::new().workers(0), Hello);
    assert!(matches!(result, Err(ServerError::Options(OptionsError::Workers(0)))), "{result:?}");
}

#[test]
fn the_defaults_are_valid_and_errors_name_the_setting() {
    Options::new().validate().unwrap();
    let error = refused(Options::new().workers(0));
    assert_eq!(error.to_string(), format!("workers must be 1 to {MAX_WORKERS}, not 0"));
    let error = refused(one().max_pool_bytes(0));
    assert!(error.to_string().starts_with("max_pool_bytes must be"), "{error}");
}

/// HTTP/2's limits (`Options::http2`): each at the edges of its range.
#[test]
fn http2_limits_are_checked_at_their_edges() {
    use falconet_server::h2::connection::Config;
    let with = |config: Config| one().http2(config);
    let base = Config::default();
    let out = |setting: &'static str, value: u64, min: u64, max: u64| OptionsError::Http2 {
        setting,
        value,
        min,
        max,
    };
    let window_max = (1u64 << 31) - 1;
    for (config, error) in [
        (
            Config { max_concurrent_streams: 0, ..base },
            out("max_concurrent_streams", 0, 1, 4_294_967_295),
        ),
        (Config { initial_window_size: 0, ..base }, out("initial_window_size", 0, 1, window_max)),
        (
            Config { initial_window_size: 1 << 31, ..base },
            out("initial_window_size", 1 << 31, 1, window_max),
        ),
        (
            Config { connection_window_size: 65_534, ..base },
            out("connection_window_size", 65_534, 65_535, window_max),
        ),
        (
            Config { max_frame_size: 16_383, ..base },
            out("max_frame_size", 16_383, 16_384, 16_777_215),
        ),
        (
            Config { max_frame_size: 1 << 24, ..base },
            out("max_frame_size", 1 << 24, 16_384, 16_777_215),
        ),
        (Config { max_queued_control: 0, ..base }, out("max_queued_control", 0, 1, u64::MAX)),
    ] {
        assert_eq!(refused(with(config)), error);
    }
    for config in [
        base,
        Config { max_concurrent_streams: 1, initial_window_size: 1, ..base },
        Config {
            initial_window_size: (1 << 31) - 1,
            connection_window_size: (1 << 31) - 1,
            max_frame_size: (1 << 24) - 1,
            ..base
        },
        Config { connection_window_size: 65_535, max_frame_size: 16_384, ..base },
        Config { reset_budget: 0, max_empty_frames: 0, max_queued_control: 1, ..base },
    ] {
        accepted(with(config));
    }
}
