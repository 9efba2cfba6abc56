#!/usr/bin/env python3
"""Drives scripts/bench-server.sh: starts each server pinned to one core,
loads it with wrk pinned to the other, and reports req/s and req per
server-CPU-second (medians over rounds) with ratios against the peers."""

import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RELEASE = os.path.join(ROOT, "target", "release")
LUA = os.path.join(ROOT, "scripts", "pipeline.lua")
TICKS = os.sysconf("SC_CLK_TCK")
CPUS = os.cpu_count() or 1
SERVER_CORE, LOAD_CORE = "0", ("1" if CPUS > 1 else "0")

BEFORE = os.path.join(ROOT, "target", "before", "release", "falconet")
EXAMPLES = os.path.join(RELEASE, "examples")
POST_1MIB = os.path.join(ROOT, "scripts", "post_1mib.lua")
PLOT_DATA = os.path.join(ROOT, "target", "plot-data")


def save_plot_data(name, rows):
    """Medians for the plots (cargo run -p falconet-benches --bin plots)."""
    os.makedirs(PLOT_DATA, exist_ok=True)
    with open(os.path.join(PLOT_DATA, f"{name}.json"), "w") as f:
        json.dump([{"load": load, "server": server, "per_cpu": per_cpu} for load, server, per_cpu in rows], f)

SERVERS = {
    "falconet": lambda addr: [os.path.join(RELEASE, "falconet"), "--addr", addr, "--workers", "1"],
    "hyper": lambda addr: [os.path.join(RELEASE, "hyper_server"), addr],
    "hyper+flush": lambda addr: [os.path.join(RELEASE, "hyper_server"), addr, "--pipeline-flush"],
    "may_minihttp": lambda addr: [os.path.join(RELEASE, "may_minihttp_server"), addr],
    # The floor (issue 16): parses nothing, canned answers, one write per read.
    "floor": lambda addr: [os.path.join(RELEASE, "floor_server"), addr],
}
# The application side (--app): the native binary now and before the
# change, axum on falconet and the same Router on hyper (axum::serve).
APP_SERVERS = {
    "falconet": SERVERS["falconet"],
    "falconet-before": lambda addr: [BEFORE, "--addr", addr, "--workers", "1"],
    "axum-on-falconet": lambda addr: [os.path.join(EXAMPLES, "axum_hello"), "--addr", addr, "--workers", "1"],
    "axum-on-hyper": lambda addr: [os.path.join(RELEASE, "axum_server"), addr],
}
# (name, path, connections, pipeline depth)
MODES = [
    ("plaintext, 64 conns", "/plaintext", 64, 1),
    ("plaintext, 64 conns, pipelined x16", "/plaintext", 64, 16),
    ("json, 64 conns", "/json", 64, 1),
]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def wait_for_port(port, timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def start(name, port, servers=None):
    addr = f"127.0.0.1:{port}"
    proc = subprocess.Popen(
        ["taskset", "-c", SERVER_CORE] + (servers or SERVERS)[name](addr),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ, RUST_LOG="warn"),
    )
    wait_for_port(port)
    return proc


def wrk(port, path, conns, depth, seconds, script=None):
    cmd = ["taskset", "-c", LOAD_CORE, "wrk", "-t1", f"-c{conns}", f"-d{seconds}s", f"http://127.0.0.1:{port}{path}"]
    if depth > 1:
        cmd[5:5] = ["-s", LUA]
        cmd += ["--", str(depth)]
    elif script:
        cmd[5:5] = ["-s", script]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    total = int(re.search(r"(\d+) requests in", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    socket_errors = re.search(r"Socket errors: (.*)", out)
    if errors or socket_errors:
        print(f"  !! wrk reported errors: {errors and errors.group(0)} {socket_errors and socket_errors.group(0)}")
    return total


def measure(name, port, mode, seconds, servers=None, script=None):
    _, path, conns, depth = mode
    proc = start(name, port, servers)
    try:
        wrk(port, path, conns, depth, 1, script)  # warm-up
        cpu0, t0 = cpu_seconds(proc.pid), time.time()
        total = wrk(port, path, conns, depth, seconds, script)
        cpu1, t1 = cpu_seconds(proc.pid), time.time()
    finally:
        proc.terminate()
        proc.wait()
    elapsed = t1 - t0
    cpu = max(cpu1 - cpu0, 1e-9)
    return total / elapsed, total / cpu, cpu / elapsed


def benchmark(seconds, rounds):
    print(f"# bench-server: {rounds} rounds x {seconds} s, server on core {SERVER_CORE}, wrk on core {LOAD_CORE}")
    results = {}
    port = 18080
    for r in range(rounds):
        for mode in MODES:
            for name in SERVERS:
                port += 1
                rps, per_cpu, util = measure(name, port, mode, seconds)
                results.setdefault((mode[0], name), []).append((rps, per_cpu, util))
                print(f"round {r + 1} | {mode[0]:<36} | {name:<13} | {rps:>10,.0f} req/s | {per_cpu:>10,.0f} req/CPU-s | server CPU {util:4.0%}", flush=True)
    print()
    peers = ("hyper", "hyper+flush", "may_minihttp", "floor")
    print("| load | server | req/s (median) | req per CPU-second (median) | server CPU | "
          + " | ".join(f"vs {peer}" for peer in peers) + " |")
    print("|---|---|---:|---:|---:|" + "---:|" * len(peers))
    for mode in MODES:
        med = {}
        for name in SERVERS:
            runs = results[(mode[0], name)]
            med[name] = tuple(statistics.median(x[i] for x in runs) for i in range(3))
        for name in SERVERS:
            rps, per_cpu, util = med[name]
            vs = [per_cpu / med[peer][1] for peer in peers]
            ratios = " | ".join(f"{v:.2f}x" for v in vs)
            print(f"| {mode[0]} | {name} | {rps:,.0f} | {per_cpu:,.0f} | {util:.0%} | {ratios} |")
    save_plot_data("server", [(mode[0], name, statistics.median(x[1] for x in results[(mode[0], name)]))
                              for mode in MODES for name in SERVERS])
    print()
    print("ratios: requests per second of server CPU, medians; hyper = default http1 builder,")
    print("hyper+flush = with pipeline_flush(true); floor = bin floor_server, which parses nothing")


def soak(minutes):
    port = 18999
    proc = start("falconet", port)
    load = subprocess.Popen(
        ["taskset", "-c", LOAD_CORE, "wrk", "-t1", "-c256", f"-d{int(minutes * 60)}s", "-s", LUA,
         f"http://127.0.0.1:{port}/plaintext", "--", "16"],
        stdout=subprocess.PIPE, text=True)
    print(f"# soak: falconet under wrk -c256 pipelined x16 for {minutes} min; RSS every 30 s")
    samples = []
    began = time.time()
    try:
        while load.poll() is None:
            time.sleep(30 if minutes >= 1 else 5)
            if load.poll() is not None:
                break
            kib = rss_kib(proc.pid)
            samples.append(kib)
            print(f"  t={time.time() - began:5.0f} s  RSS {kib / 1024:7.1f} MiB", flush=True)
        out = load.stdout.read()
    finally:
        proc.terminate()
        proc.wait()
    total = re.search(r"(\d+) requests in", out)
    print(f"requests: {total.group(1) if total else '?'}")
    if len(samples) >= 2:
        first, last, peak = samples[0], samples[-1], max(samples)
        print(f"RSS first {first / 1024:.1f} MiB, last {last / 1024:.1f} MiB, peak {peak / 1024:.1f} MiB, "
              f"drift last-first {(last - first) / 1024:+.1f} MiB")


def accept_modes(seconds, rounds):
    """Two workers, wrk with two threads on the same two cores: keep-alive
    and a connection per request, for each accept mode."""
    print(f"# accept modes: falconet --workers 2, wrk -t2 -c128, {rounds} rounds x {seconds} s")
    port = 19200
    for r in range(rounds):
        for mode in ("reuse-port", "shared"):
            port += 1
            proc = subprocess.Popen(
                [os.path.join(RELEASE, "falconet"), "--addr", f"127.0.0.1:{port}", "--workers", "2", "--accept", mode],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ, RUST_LOG="warn"))
            try:
                wait_for_port(port)
                for load, extra in (("keep-alive", []), ("connection per request", ["-H", "Connection: close"])):
                    url = f"http://127.0.0.1:{port}/plaintext"
                    subprocess.run(["wrk", "-t2", "-c128", "-d1s", *extra, url], capture_output=True, check=True)
                    cpu0, t0 = cpu_seconds(proc.pid), time.time()
                    out = subprocess.run(["wrk", "-t2", "-c128", f"-d{seconds}s", *extra, url],
                                         capture_output=True, text=True, check=True).stdout
                    cpu1, t1 = cpu_seconds(proc.pid), time.time()
                    total = int(re.search(r"(\d+) requests in", out).group(1))
                    print(f"round {r + 1} | {mode:<10} | {load:<22} | {total / (t1 - t0):>9,.0f} req/s | "
                          f"{total / max(cpu1 - cpu0, 1e-9):>9,.0f} req/CPU-s", flush=True)
            finally:
                proc.terminate()
                proc.wait()


def app_benchmark(seconds, rounds):
    """The application side: the native path against itself before the
    change, axum on falconet against axum on hyper, 1 MiB echoes, and the
    memory of pending deferred requests."""
    print(f"# bench-server --app: {rounds} rounds x {seconds} s, server on core {SERVER_CORE}, wrk on core {LOAD_CORE}")
    modes = [
        ("plaintext, 64 conns", "/plaintext", 64, 1, None, ["falconet", "falconet-before", "axum-on-falconet", "axum-on-hyper"]),
        ("plaintext, 64 conns, pipelined x16", "/plaintext", 64, 16, None, ["falconet", "falconet-before", "axum-on-falconet", "axum-on-hyper"]),
        ("POST /echo 1 MiB, 16 conns", "/echo", 16, 1, POST_1MIB, ["falconet", "axum-on-falconet", "axum-on-hyper"]),
    ]
    results = {}
    port = 19400
    for r in range(rounds):
        for label, path, conns, depth, script, names in modes:
            for name in names:
                port += 1
                rps, per_cpu, util = measure(name, port, (label, path, conns, depth), seconds, APP_SERVERS, script)
                results.setdefault((label, name), []).append((rps, per_cpu, util))
                print(f"round {r + 1} | {label:<36} | {name:<16} | {rps:>10,.0f} req/s | {per_cpu:>10,.0f} req/CPU-s | server CPU {util:4.0%}", flush=True)
    print()
    print("| load | server | req/s (median) | req per CPU-second (median) | MiB echoed per CPU-second | server CPU |")
    print("|---|---|---:|---:|---:|---:|")
    med = {}
    for label, _, _, _, script, names in modes:
        for name in names:
            runs = results[(label, name)]
            med[(label, name)] = tuple(statistics.median(x[i] for x in runs) for i in range(3))
            rps, per_cpu, util = med[(label, name)]
            echoed = f"{per_cpu:,.0f}" if script else ""
            print(f"| {label} | {name} | {rps:,.0f} | {per_cpu:,.0f} | {echoed} | {util:.0%} |")
    save_plot_data("server-app", [(label + (" (MiB)" if script else ""), name, med[(label, name)][1])
                                  for label, _, _, _, script, names in modes for name in names])
    print()
    for label, _, _, _, _, names in modes:
        base = med[(label, names[0])][1]
        if "falconet-before" in names:
            print(f"{label}: falconet / falconet-before = {base / med[(label, 'falconet-before')][1]:.3f}")
        print(f"{label}: axum-on-falconet / axum-on-hyper = "
              f"{med[(label, 'axum-on-falconet')][1] / med[(label, 'axum-on-hyper')][1]:.2f}x")
    print()
    delay_memory()


def delay_memory(count=10_000):
    """RSS of the binary with `count` connections that each answered one
    GET /plaintext (so each holds its input pipe's tail block), then with
    each waiting on a deferred GET /delay: the difference per request is
    the memory of a pending request beyond its connection's blocks."""
    port = 19990
    proc = start("falconet", port)
    conns = []
    try:
        for _ in range(count):
            conns.append(socket.create_connection(("127.0.0.1", port)))
        for c in conns:
            c.sendall(b"GET /plaintext HTTP/1.1\r\nHost: t\r\n\r\n")
        for c in conns:
            c.settimeout(15)
            got = b""
            while not got.endswith(b"Hello, World!"):
                got += c.recv(4096)
        time.sleep(1)
        served = rss_kib(proc.pid)
        for c in conns:
            c.sendall(b"GET /delay?ms=10000 HTTP/1.1\r\nHost: t\r\n\r\n")
        time.sleep(4)
        pending = rss_kib(proc.pid)
        print(f"# /delay memory: {count} connections after one request each: RSS {served / 1024:.1f} MiB; "
              f"each with a pending /delay?ms=10000: {pending / 1024:.1f} MiB; "
              f"{(pending - served) * 1024 / count:,.0f} bytes per pending request")
        answered = 0
        for c in conns[:100]:
            got = b""
            while b"delayed 10000 ms" not in got:
                chunk = c.recv(4096)
                if not chunk:
                    break
                got += chunk
            answered += b"delayed 10000 ms" in got
        print(f"  (of the first 100, {answered} answered 'delayed 10000 ms')")
    finally:
        for c in conns:
            c.close()
        proc.terminate()
        proc.wait()


def echo_benchmark(seconds, rounds):
    """Only the 1 MiB POST /echo of --app (servers built by --app)."""
    names = ["falconet", "axum-on-falconet", "axum-on-hyper"]
    mode = ("POST /echo 1 MiB, 16 conns", "/echo", 16, 1)
    results = {}
    port = 19700
    for r in range(rounds):
        for name in names:
            port += 1
            rps, per_cpu, util = measure(name, port, mode, seconds, APP_SERVERS, POST_1MIB)
            results.setdefault(name, []).append(per_cpu)
            print(f"round {r + 1} | {name:<16} | {rps:>8,.0f} req/s | {per_cpu:>8,.0f} MiB/CPU-s | server CPU {util:4.0%}", flush=True)
    for name in names:
        print(f"{name}: {statistics.median(results[name]):,.0f} MiB echoed per CPU-second (median)")
    base = statistics.median(results["axum-on-hyper"])
    print(f"axum-on-falconet / axum-on-hyper = {statistics.median(results['axum-on-falconet']) / base:.2f}x")


# HTTP/2 (--h2): falconet (h2c, prior knowledge), hyper's http2 server on
# one current-thread runtime, and nghttpd (the C reference, one worker),
# each pinned to one core, h2load pinned to the other.
H2_ROOT = os.path.join(ROOT, "target", "h2-root")
H2_UPLOAD = os.path.join(ROOT, "target", "h2-upload-1mib.bin")
H2_SERVERS = {
    "falconet": lambda addr: [os.path.join(RELEASE, "falconet"), "--addr", addr, "--workers", "1"],
    "hyper": lambda addr: [os.path.join(RELEASE, "hyper_h2_server"), addr],
    "axum-on-falconet": lambda addr: [os.path.join(EXAMPLES, "axum_hello"), "--addr", addr, "--workers", "1"],
    "nghttpd": lambda addr: ["nghttpd", "--no-tls", "-a", addr.split(":")[0], "-d", H2_ROOT, addr.split(":")[1]],
    "falconet-before": lambda addr: [BEFORE, "--addr", addr, "--workers", "1"],
}
# (name, path, h2load arguments, servers that serve it)
H2_MODES = [
    ("plaintext, -c16 -m32", "/plaintext", ["-c16", "-m32"], ("falconet", "hyper", "nghttpd")),
    ("1 MiB responses, -c16 -m32 -w16 -W16", "/bytes?n=1048576",
     ["-c16", "-m32", "-w16", "-W16"], ("falconet", "hyper", "nghttpd")),
    ("1 MiB uploads, -c16 -m32 -w16 -W16", "/upload",
     ["-c16", "-m32", "-w16", "-W16", "-d", H2_UPLOAD], ("falconet", "hyper")),
    ("1 MiB upload echoed, -c16 -m32 -w16 -W16", "/echo",
     ["-c16", "-m32", "-w16", "-W16", "-d", H2_UPLOAD], ("falconet", "axum-on-falconet", "hyper")),
]


def frames_benchmark(seconds, rounds):
    """Bodies of small frames (`GET /frames?size=N&count=M`, 1 MiB of
    N-byte frames, all ready): axum on falconet against axum on hyper over
    HTTP/1.1 (wrk, 4 connections), and against hyper's HTTP/2 server
    (`hyper_h2_server`, no axum; axum::serve here speaks HTTP/1 only) over
    HTTP/2 (h2load, 4 streams on one connection). MiB of body per server
    CPU-second."""
    print(f"# bench-server --frames: {rounds} rounds x {seconds} s, server on core {SERVER_CORE}, load on core {LOAD_CORE}")
    servers = dict(APP_SERVERS, **{"hyper-h2": H2_SERVERS["hyper"]})
    peers = {"HTTP/1.1": "axum-on-hyper", "HTTP/2": "hyper-h2"}
    sizes = [1, 100, 1024, 16384]
    results = {}
    port = 19700
    for r in range(rounds):
        for size in sizes:
            path = f"/frames?size={size}&count={(1 << 20) // size}"
            for protocol, peer in peers.items():
                for name in ["axum-on-falconet", peer]:
                    port += 1
                    proc = start(name, port, servers)
                    try:
                        def load(secs):
                            if protocol == "HTTP/1.1":
                                return wrk(port, path, 4, 1, secs)
                            return h2load(port, path, ["-c1", "-m4"], secs)
                        load(1)  # warm-up
                        cpu0, t0 = cpu_seconds(proc.pid), time.time()
                        total = load(seconds)
                        cpu1, t1 = cpu_seconds(proc.pid), time.time()
                    finally:
                        proc.terminate()
                        proc.wait()
                    per_cpu = total / max(cpu1 - cpu0, 1e-9)  # MiB: one per response
                    results.setdefault((size, protocol, name), []).append(per_cpu)
                    print(f"round {r + 1} | {size:>6} B frames | {protocol:<8} | {name:<16} | {total / (t1 - t0):>8,.1f} MiB/s "
                          f"| {per_cpu:>8,.1f} MiB/CPU-s | server CPU {(cpu1 - cpu0) / (t1 - t0):4.0%}", flush=True)
    print()
    print("| frames | protocol | axum on falconet (MiB per CPU-s) | peer | peer (MiB per CPU-s) | ratio | per round |")
    print("|---:|---|---:|---|---:|---:|---|")
    for size in sizes:
        for protocol, peer in peers.items():
            ours, theirs = results[(size, protocol, "axum-on-falconet")], results[(size, protocol, peer)]
            rounds_ratio = ", ".join(f"{a / b:.2f}" if b else "-" for a, b in zip(ours, theirs))
            mo, mt = statistics.median(ours), statistics.median(theirs)
            ratio = f"{mo / mt:.2f}x" if mt else "-"
            print(f"| {size} B | {protocol} | {mo:,.1f} | {peer} | {mt:,.1f} | {ratio} | {rounds_ratio} |")


def h2load(port, path, extra, seconds):
    cmd = ["taskset", "-c", LOAD_CORE, "h2load", "-t1", "-D", str(seconds)] + extra + [f"http://127.0.0.1:{port}{path}"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    succeeded = int(re.search(r"(\d+) succeeded", out).group(1))
    failed = re.search(r"(\d+) failed, (\d+) errored", out)
    if failed and (int(failed.group(1)) or int(failed.group(2))):
        print(f"  !! h2load reported {failed.group(0)}")
    return succeeded


def h2_benchmark(seconds, rounds, only=None):
    """`only`: run the loads whose name contains it (e.g. "1 MiB responses")."""
    os.makedirs(H2_ROOT, exist_ok=True)
    with open(os.path.join(H2_ROOT, "plaintext"), "w") as f:
        f.write("Hello, World!")
    with open(os.path.join(H2_ROOT, "bytes"), "wb") as f:
        f.write(b"x" * (1 << 20))
    if not os.path.exists(H2_UPLOAD):
        with open(H2_UPLOAD, "wb") as f:
            f.write(os.urandom(1 << 20))
    print(f"# bench-server --h2: {rounds} rounds x {seconds} s, server on core {SERVER_CORE}, h2load on core {LOAD_CORE}")
    results = {}
    port = 19500
    modes = [m for m in H2_MODES if only is None or only in m[0]]
    if os.environ.get("FALCONET_BEFORE"):
        # A regression check: the earlier binary beside today's (built by
        # bench-server.sh from the commit FALCONET_BEFORE names).
        if not os.path.exists(BEFORE):
            sys.exit(f"FALCONET_BEFORE is set but {BEFORE} is missing: run bench-server.sh --h2 first")
        modes = [(mode, path, extra, names[:1] + ("falconet-before",) + names[1:])
                 for mode, path, extra, names in modes]
    for r in range(rounds):
        for mode, path, extra, names in modes:
            for name in names:
                port += 1
                proc = start(name, port, H2_SERVERS)
                try:
                    h2load(port, path, extra, 1)  # warm-up
                    cpu0, t0 = cpu_seconds(proc.pid), time.time()
                    done = h2load(port, path, extra, seconds)
                    cpu1, t1 = cpu_seconds(proc.pid), time.time()
                    rss = rss_kib(proc.pid)
                finally:
                    proc.terminate()
                    proc.wait()
                rps, per_cpu, util = done / (t1 - t0), done / max(cpu1 - cpu0, 1e-9), (cpu1 - cpu0) / (t1 - t0)
                results.setdefault((mode, name), []).append((rps, per_cpu, util))
                print(f"round {r + 1} | {mode:<42} | {name:<8} | {rps:>10,.0f} req/s | {per_cpu:>10,.0f} req/CPU-s | "
                      f"server CPU {util:4.0%} | RSS {rss / 1024:6.1f} MiB", flush=True)
    print()
    print("| load | server | req/s (median) | req per CPU-second (median) | server CPU | falconet vs it |")
    print("|---|---|---:|---:|---:|---:|")
    for mode, _, _, names in modes:
        med = {n: tuple(statistics.median(x[i] for x in results[(mode, n)]) for i in range(3)) for n in names}
        for name in names:
            rps, per_cpu, util = med[name]
            ratio = med["falconet"][1] / per_cpu
            print(f"| {mode} | {name} | {rps:,.0f} | {per_cpu:,.0f} | {util:.0%} | {ratio:.2f}x |")
        if "axum-on-falconet" in med:
            axum = med["axum-on-falconet"][1] / med["hyper"][1]
            print(f"| {mode} | axum-on-falconet vs hyper | | | | {axum:.2f}x |")
    if only is None and not os.environ.get("FALCONET_BEFORE"):  # a partial run leaves the plots' data as it was
        save_plot_data("server-h2", [(mode, n, statistics.median(x[1] for x in results[(mode, n)]))
                                     for mode, _, _, names in modes for n in names])


def h2_soak(minutes):
    """falconet's RSS under h2load for `minutes`: plaintext at -c16 -m32
    and 1 MiB responses with the windows binding, alternating each minute."""
    port = 19990
    proc = start("falconet", port, H2_SERVERS)
    print(f"# h2 soak: falconet under h2load for {minutes} min (plaintext -c16 -m32 and "
          f"1 MiB responses -c16 -m32 -w16 -W16, a minute each in turn); RSS every 30 s")
    samples = []
    began = time.time()
    try:
        while time.time() - began < minutes * 60:
            for path, extra in (("/plaintext", ["-c16", "-m32"]),
                                ("/bytes?n=1048576", ["-c16", "-m32", "-w16", "-W16"])):
                for _ in range(2):
                    h2load(port, path, extra, 30)
                    kib = rss_kib(proc.pid)
                    samples.append(kib)
                    print(f"  t={time.time() - began:5.0f} s  {path:<18} RSS {kib / 1024:7.1f} MiB", flush=True)
    finally:
        proc.terminate()
        proc.wait()
    first, last, peak = samples[0], samples[-1], max(samples)
    print(f"RSS first {first / 1024:.1f} MiB, last {last / 1024:.1f} MiB, peak {peak / 1024:.1f} MiB, "
          f"drift last-first {(last - first) / 1024:+.1f} MiB")


def main():
    args = sys.argv[1:]
    if args and args[0] == "--echo":
        echo_benchmark(int(args[1]) if len(args) > 1 else 5, int(args[2]) if len(args) > 2 else 3)
    elif args and args[0] == "--delay-memory":
        delay_memory()
    elif args and args[0] == "--app":
        app_benchmark(int(args[1]) if len(args) > 1 else 10, int(args[2]) if len(args) > 2 else 3)
    elif args and args[0] == "--frames":
        frames_benchmark(int(args[1]) if len(args) > 1 else 3, int(args[2]) if len(args) > 2 else 3)
    elif args and args[0] == "--h2-soak":
        h2_soak(float(args[1]) if len(args) > 1 else 10)
    elif args and args[0] == "--h2":
        h2_benchmark(int(args[1]) if len(args) > 1 else 10, int(args[2]) if len(args) > 2 else 3,
                     args[3] if len(args) > 3 else None)
    elif args and args[0] == "--soak":
        soak(float(args[1]) if len(args) > 1 else 10)
    elif args and args[0] == "--accept":
        accept_modes(int(args[1]) if len(args) > 1 else 5, int(args[2]) if len(args) > 2 else 3)
    else:
        benchmark(int(args[0]) if args else 10, int(args[1]) if len(args) > 1 else 3)


if __name__ == "__main__":
    main()
