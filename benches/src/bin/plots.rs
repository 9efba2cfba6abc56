//! Renders the benchmark results as SVG plots into `docs/img/`:
//!
//! - every criterion group whose parameter is a size or a thread count
//!   (`target/criterion`): throughput against it, one line per
//!   implementation (the pipe's GB/s against write size, the registry's
//!   Mops/s against threads for each mix, ...);
//! - the flow window's latency percentiles (`target/plot-data/flow.json`,
//!   written by `flow_harness`);
//! - the HTTP servers' requests per CPU-second per load
//!   (`target/plot-data/server.json` and `server-app.json`, written by
//!   `scripts/bench_server.py`).
//!
//! `cargo run --release -p falconet-benches --bin plots` (scripts/bench.sh
//! and scripts/bench-server.sh run it). Missing inputs are skipped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use plotters::prelude::*;
use serde_json::Value;

const WIDTH: u32 = 800;
const HEIGHT: u32 = 480;

/// Series colours, falconet first.
const COLOURS: [RGBColor; 8] = [
    RGBColor(214, 39, 40),
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(127, 127, 127),
    RGBColor(23, 190, 207),
];

type Error = Box<dyn std::error::Error>;

/// The CPU the figures came from (the plots are rendered where the
/// benchmarks ran), as `lscpu` names it.
fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|line| {
            line.strip_prefix("model name")?.split_once(':').map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cpus = cpuinfo.lines().filter(|line| line.starts_with("processor")).count();
    format!("{model}, {cpus} vCPUs")
}

fn main() -> Result<(), Error> {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("..");
    let out = root.join("docs/img");
    std::fs::create_dir_all(&out)?;
    let mut written = Vec::new();
    for (group, series) in criterion_groups(&root.join("target/criterion"))? {
        let file = out.join(format!("{}.svg", slug(&group)));
        if throughput_plot(&file, &group, &series)? {
            written.push(file);
        }
    }
    let data = root.join("target/plot-data");
    if let Ok(text) = std::fs::read_to_string(data.join("flow.json")) {
        let file = out.join("flow-latency.svg");
        flow_plot(&file, &serde_json::from_str(&text)?)?;
        written.push(file);
    }
    for (name, title) in [
        ("server", "HTTP servers: requests per server CPU-second (wrk, one core each)"),
        ("server-app", "The application side: requests (echo: MiB) per server CPU-second"),
    ] {
        if let Ok(text) = std::fs::read_to_string(data.join(format!("{name}.json"))) {
            let file = out.join(format!("{name}.svg"));
            server_plot(&file, title, &serde_json::from_str(&text)?)?;
            written.push(file);
        }
    }
    for file in &written {
        println!("wrote {}", file.strip_prefix(&root).unwrap_or(file).display());
    }
    if written.is_empty() {
        println!("nothing to plot: run scripts/bench.sh or scripts/bench-server.sh first");
    }
    Ok(())
}

/// One implementation's points: parameter (x) and throughput (y).
type Series = BTreeMap<String, Vec<(f64, f64)>>;

/// A criterion group: its unit ("GB/s" or "M/s") and series.
struct Group {
    unit: &'static str,
    x_label: &'static str,
    log_x: bool,
    series: Series,
}

/// Reads every `*/new/benchmark.json` under `dir` into groups whose
/// parameter is numeric (`64B`, `4KiB`, `2` threads).
fn criterion_groups(dir: &Path) -> Result<BTreeMap<String, Group>, Error> {
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&path) else { continue };
        for entry in entries {
            let entry = entry?.path();
            if entry.is_dir() {
                stack.push(entry);
                continue;
            }
            let is_new = entry.parent().and_then(Path::file_name).is_some_and(|n| n == "new");
            if !is_new || entry.file_name().is_none_or(|n| n != "benchmark.json") {
                continue;
            }
            let meta: Value = serde_json::from_str(&std::fs::read_to_string(&entry)?)?;
            let estimates: Value = serde_json::from_str(&std::fs::read_to_string(
                entry.with_file_name("estimates.json"),
            )?)?;
            let (Some(group), Some(function), Some(param), Some(median)) = (
                meta["group_id"].as_str(),
                meta["function_id"].as_str(),
                meta["value_str"].as_str(),
                estimates["median"]["point_estimate"].as_f64(),
            ) else {
                continue;
            };
            let Some((x, is_size)) = parse_param(param) else { continue };
            let throughput = &meta["throughput"];
            let (per_iteration, unit) = if let Some(bytes) = throughput["Bytes"].as_f64() {
                (bytes, "GB/s")
            } else {
                (throughput["Elements"].as_f64().unwrap_or(1.0), "M/s")
            };
            // Bytes per ns is GB/s; elements per ns x 1000 is M/s.
            let per_ns = per_iteration / median;
            let y = if unit == "GB/s" { per_ns } else { per_ns * 1e3 };
            let group = groups.entry(group.to_string()).or_insert_with(|| Group {
                unit,
                x_label: if is_size { "bytes per write" } else { "threads" },
                log_x: is_size,
                series: Series::new(),
            });
            group.series.entry(function.to_string()).or_default().push((x, y));
        }
    }
    for group in groups.values_mut() {
        for points in group.series.values_mut() {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
    }
    Ok(groups)
}

/// `64B` / `4KiB` (a size) or `2` (a count).
fn parse_param(param: &str) -> Option<(f64, bool)> {
    for (suffix, scale) in [("KiB", 1024.0), ("MiB", 1048576.0), ("B", 1.0)] {
        if let Some(number) = param.strip_suffix(suffix) {
            return number.parse::<f64>().ok().map(|n| (n * scale, true));
        }
    }
    param.parse::<f64>().ok().map(|n| (n, false))
}

fn slug(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' })
        .collect()
}

/// Orders series falconet first, then by name.
fn ordered<T>(series: &BTreeMap<String, T>) -> Vec<(&String, &T)> {
    let mut all: Vec<_> = series.iter().collect();
    all.sort_by_key(|(name, _)| (!name.starts_with("falconet"), (*name).clone()));
    all
}

/// Throughput against the parameter, one line per implementation; false
/// when the group has a single point per series (nothing to draw a line
/// through).
fn throughput_plot(file: &Path, title: &str, group: &Group) -> Result<bool, Error> {
    let points: Vec<(f64, f64)> = group.series.values().flatten().copied().collect();
    if group.series.values().all(|p| p.len() < 2) {
        return Ok(false);
    }
    let (x_min, x_max) =
        points.iter().fold((f64::MAX, f64::MIN), |(lo, hi), p| (lo.min(p.0), hi.max(p.0)));
    let y_max = points.iter().map(|p| p.1).fold(0.0, f64::max) * 1.1;
    let backend = SVGBackend::new(file, (WIDTH, HEIGHT)).into_drawing_area();
    backend.fill(&WHITE)?;
    let mut builder = ChartBuilder::on(&backend);
    let chart = builder
        .caption(format!("{title} ({})", machine()), ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60);
    if group.log_x {
        let mut chart = chart.build_cartesian_2d((x_min..x_max).log_scale(), 0.0..y_max)?;
        chart
            .configure_mesh()
            .x_desc(group.x_label)
            .y_desc(group.unit)
            .x_label_formatter(&|x| size_label(*x))
            .draw()?;
        draw_series(&mut chart, group)?;
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
    } else {
        let mut chart = chart.build_cartesian_2d(x_min..x_max, 0.0..y_max)?;
        let counts = points.iter().map(|p| p.0 as u64).collect::<std::collections::BTreeSet<_>>();
        chart
            .configure_mesh()
            .x_desc(group.x_label)
            .y_desc(group.unit)
            .x_labels(counts.len().max(2))
            .x_label_formatter(&|x| format!("{x:.0}"))
            .draw()?;
        draw_series(&mut chart, group)?;
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
    }
    backend.present()?;
    Ok(true)
}

fn draw_series<'a, X>(
    chart: &mut ChartContext<
        'a,
        SVGBackend<'a>,
        Cartesian2d<X, plotters::coord::types::RangedCoordf64>,
    >,
    group: &Group,
) -> Result<(), Error>
where
    X: Ranged<ValueType = f64>,
{
    for (i, (name, points)) in ordered(&group.series).into_iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let width = if name.starts_with("falconet") { 3 } else { 1 };
        chart
            .draw_series(LineSeries::new(points.iter().copied(), colour.stroke_width(width)))?
            .label(name.as_str())
            .legend(move |(x, y)| {
                PathElement::new([(x, y), (x + 20, y)], colour.stroke_width(width))
            });
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, colour.filled())))?;
    }
    Ok(())
}

fn size_label(bytes: f64) -> String {
    if bytes >= 1048576.0 {
        format!("{:.0} MiB", bytes / 1048576.0)
    } else if bytes >= 1024.0 {
        format!("{:.0} KiB", bytes / 1024.0)
    } else {
        format!("{bytes:.0} B")
    }
}

/// The flow harness's latency percentiles: for each K (application
/// threads) and implementation, release latency at p50 .. p99.99, log y.
fn flow_plot(file: &Path, data: &Value) -> Result<(), Error> {
    const PERCENTILES: [&str; 5] = ["p50", "p99", "p99.9", "p99.99", "max"];
    let mut series: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for (k, impls) in data.as_object().into_iter().flatten() {
        for (name, ops) in impls.as_object().into_iter().flatten() {
            let values: Vec<f64> =
                ops["release"].as_array().into_iter().flatten().filter_map(Value::as_f64).collect();
            let points =
                values.iter().enumerate().map(|(i, &ns)| (i as f64, ns.max(1.0))).collect();
            series.insert(format!("{name}, K = {k}"), points);
        }
    }
    let y_max = series.values().flatten().map(|p| p.1).fold(1.0, f64::max) * 2.0;
    let backend = SVGBackend::new(file, (WIDTH, HEIGHT)).into_drawing_area();
    backend.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&backend)
        .caption(
            format!("flow window: release latency percentiles ({})", machine()),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.2..4.2, (1.0..y_max).log_scale())?;
    chart
        .configure_mesh()
        .x_labels(5)
        .x_label_formatter(&|x: &f64| {
            PERCENTILES.get(x.round() as usize).copied().unwrap_or("").to_string()
        })
        .y_desc("ns per release")
        .draw()?;
    for (i, (name, points)) in ordered(&series).into_iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let width = if name.starts_with("falconet") { 3 } else { 1 };
        chart
            .draw_series(LineSeries::new(points.iter().copied(), colour.stroke_width(width)))?
            .label(name.as_str())
            .legend(move |(x, y)| {
                PathElement::new([(x, y), (x + 20, y)], colour.stroke_width(width))
            });
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    backend.present()?;
    Ok(())
}

/// Requests per CPU-second: one group of bars per load, a bar per server.
fn server_plot(file: &Path, title: &str, data: &Value) -> Result<(), Error> {
    // [{"load": .., "server": .., "per_cpu": ..}, ...]
    let rows: Vec<(String, String, f64)> = data
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|row| {
            Some((
                row["load"].as_str()?.to_string(),
                row["server"].as_str()?.to_string(),
                row["per_cpu"].as_f64()?,
            ))
        })
        .collect();
    let mut loads: Vec<String> = Vec::new();
    let mut servers: Vec<String> = Vec::new();
    for (load, server, _) in &rows {
        if !loads.contains(load) {
            loads.push(load.clone());
        }
        if !servers.contains(server) {
            servers.push(server.clone());
        }
    }
    let backend = SVGBackend::new(file, (WIDTH, 60 + 140 * loads.len() as u32)).into_drawing_area();
    backend.fill(&WHITE)?;
    let body = backend.titled(&format!("{title} ({})", machine()), ("sans-serif", 16))?;
    let areas = body.split_evenly((loads.len().max(1), 1));
    for (area, load) in areas.iter().zip(&loads) {
        let bars: Vec<(usize, f64)> = servers
            .iter()
            .enumerate()
            .filter_map(|(i, s)| rows.iter().find(|r| &r.0 == load && &r.1 == s).map(|r| (i, r.2)))
            .collect();
        let x_max = bars.iter().map(|b| b.1).fold(1.0, f64::max) * 1.25;
        let mut chart = ChartBuilder::on(area)
            .caption(load.as_str(), ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(24)
            .y_label_area_size(150)
            .build_cartesian_2d(0.0..x_max, -0.5..servers.len() as f64 - 0.5)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(servers.len())
            .y_label_formatter(&|y| {
                let i = y.round();
                if (y - i).abs() < 1e-6 {
                    servers.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .x_label_formatter(&|x| format!("{:.0}", x))
            .draw()?;
        chart.draw_series(bars.iter().map(|&(i, value)| {
            let colour = COLOURS[i % COLOURS.len()];
            let y = i as f64;
            Rectangle::new([(0.0, y - 0.35), (value, y + 0.35)], colour.filled())
        }))?;
        chart.draw_series(bars.iter().map(|&(i, value)| {
            Text::new(format!("{value:.0}"), (value, i as f64), ("sans-serif", 12))
        }))?;
    }
    backend.present()?;
    Ok(())
}
