# Sourced by the long-run scripts: the library crates and their loom cfgs.
# Adding a crate: append it here (and its cfg to [workspace.lints] in Cargo.toml).

# Crates whose tests run under Miri and ThreadSanitizer (they use unsafe;
# falconet-flow has none: #![forbid(unsafe_code)]).
UNSAFE_CRATES=(falconet-pool falconet-pipe falconet-registry)

# "crate:cfg" pairs: each crate's loom models build under its own cfg.
LOOM_CRATES=(falconet-pool:falconet_pool_loom falconet-pipe:falconet_pipe_loom falconet-flow:falconet_flow_loom falconet-registry:falconet_registry_loom)

# "crate:cfg" pairs whose loom models are unit tests (`loom_models` modules
# of crate-private protocols). Not in the CI run at bound 2 (LOOM_QUICK=1):
# the cfg rebuilds the server's whole dependency tree, minutes on 2 cores.
LOOM_LIB_CRATES=(falconet-server:falconet_server_loom)
