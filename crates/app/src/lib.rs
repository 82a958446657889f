//! nectar-app: the parties' session code behind the `nectar` CLI and the Python binding.
//!
//! The binary (`src/main.rs`) parses the command line and calls into these modules; the Python
//! package (`crates/py`) calls the same server, client and session code, so both front ends
//! speak one wire protocol and report the same measurements.

#[macro_use]
pub mod stdout;
pub mod accuracy;
pub mod admin;
pub mod admission;
pub mod batch;
pub mod bench_he;
pub mod bench_linear;
pub mod bench_model;
pub mod bench_mpc;
pub mod bench_net;
pub mod bench_nn;
pub mod bench_ot;
pub mod bench_suites;
pub mod chat;
pub mod child_party;
pub mod demo;
pub mod fetch;
pub mod fit;
pub mod html_report;
pub mod logging;
pub mod memory;
pub mod metrics;
pub mod params;
pub mod plan;
pub mod private;
pub mod progress;
pub mod rate_limit;
pub mod report;
pub mod retry;
pub mod session;
pub mod suites;
pub mod test_seed;
pub mod tune;
pub mod tuned;
pub mod watch;
