//! The `kubectl-kudo` binary: parse the command line, run, exit with 0
//! (success), 1 (failure) or 2 (usage error).

use std::process::ExitCode;

fn main() -> ExitCode {
    let code = kubectl_kudo::main_with_args(std::env::args_os());
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
