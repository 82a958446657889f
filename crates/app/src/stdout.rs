//! Standard output that ends quietly when its reader goes away: `nectar suites | head -1`
//! exits 0 instead of panicking in `outln!` on EPIPE (Rust ignores SIGPIPE, so a closed
//! pipe is a write error). Every command prints through [`outln!`] / [`out!`].

use std::io::{ErrorKind, Write};

/// Writes `args` (and a newline) to stdout. A closed pipe ends the process with status 0;
/// any other write error with a one-line message and status 1.
pub fn write(args: std::fmt::Arguments, newline: bool) {
    let mut o = std::io::stdout().lock();
    let r = o.write_fmt(args).and_then(|_| if newline { o.write_all(b"\n") } else { Ok(()) });
    if let Err(e) = r {
        if e.kind() == ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: writing to stdout: {e}");
        std::process::exit(1);
    }
}

/// `outln!` that ends the process quietly on a closed stdout ([`write`]).
#[macro_export]
macro_rules! outln {
    () => {
        $crate::stdout::write(format_args!(""), true)
    };
    ($($t:tt)*) => {
        $crate::stdout::write(format_args!($($t)*), true)
    };
}

/// `print!` that ends the process quietly on a closed stdout ([`write`]).
#[macro_export]
macro_rules! out {
    ($($t:tt)*) => {
        $crate::stdout::write(format_args!($($t)*), false)
    };
}
