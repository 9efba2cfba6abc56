-- wrk: every request POSTs a 1 MiB body (scripts/bench-server.sh --app echo).
wrk.method = "POST"
wrk.body = string.rep("x", 1048576)
wrk.headers["Content-Type"] = "application/octet-stream"
