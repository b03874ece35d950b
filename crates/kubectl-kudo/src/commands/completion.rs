//! Completion of `kubectl kudo`: `completion bash|zsh|fish` prints a script
//! that completes the words after `kubectl kudo` and hands everything else
//! to kubectl's own completion; the candidates come from `kubectl-kudo
//! __complete WORDS...`, kubectl's plugin completion protocol (the words
//! after `kudo`, the last one being completed; one candidate per line, then
//! `:DIRECTIVE`), so a `kubectl_complete-kudo` that runs it works too.

use clap::CommandFactory;

use crate::cli::{Cli, CompletionArgs, CompletionShell};
use crate::error::Result;

/// The hidden command kubectl's protocol calls.
pub const PROTOCOL_COMMAND: &str = "__complete";

/// Cobra's directive: the shell offers no file names.
const NO_FILE_COMPLETION: u8 = 4;

/// Prints the completion script for the shell on stdout.
pub fn run(args: &CompletionArgs) -> Result<()> {
    out!(
        "{}",
        match args.shell {
            CompletionShell::Bash => BASH,
            CompletionShell::Zsh => ZSH,
            CompletionShell::Fish => FISH,
        }
    );
    Ok(())
}

/// Prints the candidates for `words` (see the module docs).
pub fn complete(words: &[String]) {
    let (candidates, files) = candidates(words);
    for candidate in candidates {
        outln!("{candidate}");
    }
    outln!(":{}", if files { 0 } else { NO_FILE_COMPLETION });
}

/// What may follow `words` (the last one is the word being completed), and
/// whether file names fit there too.
pub fn candidates(words: &[String]) -> (Vec<String>, bool) {
    let mut root = Cli::command();
    root.build();
    let (current, done) = match words.split_last() {
        Some((last, done)) => (last.as_str(), done),
        None => ("", &[][..]),
    };
    let mut command = &root;
    let mut positionals = 0;
    let mut value_of: Option<&clap::Arg> = None;
    for word in done {
        if value_of.take().is_some() {
            continue;
        }
        if let Some(long) = word.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((name, _)) => (name, true),
                None => (long, false),
            };
            value_of = find_flag(command, |a| a.get_long() == Some(name))
                .filter(|a| takes_value(a) && !inline);
        } else if let Some(short) = word.strip_prefix('-').filter(|s| !s.is_empty()) {
            let last = short.chars().next_back();
            value_of = find_flag(command, |a| a.get_short() == last)
                .filter(|a| takes_value(a) && short.chars().count() == 1);
        } else if let Some(sub) = command.find_subcommand(word) {
            command = sub;
            positionals = 0;
        } else {
            positionals += 1;
        }
    }
    let (found, files) = if let Some(arg) = value_of {
        (possible_values(arg), names_files(arg))
    } else if current.starts_with('-') {
        let flags = command
            .get_arguments()
            .filter(|a| !a.is_hide_set())
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .collect();
        (flags, false)
    } else {
        let subcommands: Vec<String> = command
            .get_subcommands()
            .filter(|c| !c.is_hide_set())
            .map(|c| c.get_name().to_string())
            .collect();
        if subcommands.is_empty() {
            match command.get_positionals().nth(positionals) {
                Some(arg) => (possible_values(arg), names_files(arg)),
                None => (Vec::new(), false),
            }
        } else {
            (subcommands, false)
        }
    };
    let found = found
        .into_iter()
        .filter(|c| c.starts_with(current))
        .collect();
    (found, files)
}

fn find_flag(command: &clap::Command, matches: impl Fn(&clap::Arg) -> bool) -> Option<&clap::Arg> {
    command
        .get_arguments()
        .find(|a| !a.is_positional() && matches(a))
}

/// Whether the argument is a path (a package, a parameter file).
fn names_files(arg: &clap::Arg) -> bool {
    use clap::ValueHint;
    matches!(
        arg.get_value_hint(),
        ValueHint::AnyPath | ValueHint::FilePath | ValueHint::DirPath
    )
}

fn takes_value(arg: &clap::Arg) -> bool {
    arg.get_action().takes_values()
}

fn possible_values(arg: &clap::Arg) -> Vec<String> {
    arg.get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| v.get_name().to_string())
        .collect()
}

const BASH: &str = r#"# bash completion for kubectl kudo. Load it after kubectl's own, e.g. in ~/.bashrc:
#   source <(kubectl completion bash)
#   source <(kubectl kudo completion bash)
__kubectl_kudo_complete() {
    if [[ ${COMP_CWORD} -ge 2 && ${COMP_WORDS[1]} == kudo ]]; then
        local cur=${COMP_WORDS[COMP_CWORD]} out directive=0 IFS=$'\n'
        out=$(kubectl-kudo __complete "${COMP_WORDS[@]:2:COMP_CWORD-2}" "$cur" 2>/dev/null)
        directive=${out##*:}
        out=$(printf '%s\n' "$out" | sed '$d')
        COMPREPLY=($(compgen -W "$out" -- "$cur"))
        if [[ ${#COMPREPLY[@]} -eq 0 && $(( ${directive:-0} & 4 )) -eq 0 ]]; then
            COMPREPLY=($(compgen -f -- "$cur"))
        fi
        return 0
    fi
    if declare -F __start_kubectl >/dev/null; then
        __start_kubectl "$@"
    fi
}
complete -o default -F __kubectl_kudo_complete kubectl
"#;

const ZSH: &str = r#"# zsh completion for kubectl kudo. Load it after kubectl's own, e.g. in ~/.zshrc:
#   source <(kubectl completion zsh)
#   source <(kubectl kudo completion zsh)
__kubectl_kudo_complete() {
    if (( CURRENT > 2 )) && [[ ${words[2]} == kudo ]]; then
        local -a lines
        lines=("${(@f)$(kubectl-kudo __complete "${(@)words[3,CURRENT]}" 2>/dev/null)}")
        local directive=${lines[-1]#:}
        lines=("${(@)lines[1,-2]}")
        if (( ${#lines} )); then
            compadd -- "${lines[@]}"
        elif (( (${directive:-0} & 4) == 0 )); then
            _files
        fi
        return
    fi
    (( $+functions[_kubectl] )) && _kubectl "$@"
}
compdef __kubectl_kudo_complete kubectl
"#;

const FISH: &str = r#"# fish completion for kubectl kudo, e.g.:
#   kubectl kudo completion fish > ~/.config/fish/completions/kubectl_kudo.fish
function __kubectl_kudo_complete
    set -l words (commandline -opc)
    set -e words[1..2]
    kubectl-kudo __complete $words (commandline -ct) 2>/dev/null | string match -v -r '^:'
end
complete -c kubectl -n '__fish_seen_subcommand_from kudo' -f -a '(__kubectl_kudo_complete)'
"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        let mut words: Vec<String> = text.split(' ').map(str::to_string).collect();
        if text.is_empty() {
            words = vec![String::new()];
        }
        words
    }

    #[test]
    fn commands_then_subcommands_are_offered() {
        let (found, files) = candidates(&words(""));
        assert!(found.contains(&"plan".to_string()), "{found:?}");
        assert!(!found.contains(&PROTOCOL_COMMAND.to_string()));
        assert!(!files);
        assert_eq!(candidates(&words("plan con")).0, ["continue"]);
    }

    #[test]
    fn flags_values_and_positionals_are_offered() {
        let (found, _) = candidates(&words("plan status --inst"));
        assert_eq!(found, ["--instance"]);
        assert_eq!(
            candidates(&words("get -o y")).0,
            ["yaml"],
            "values of a global flag"
        );
        assert_eq!(
            candidates(&words("get op")).0,
            ["operators", "operatorversions"]
        );
        assert_eq!(candidates(&words("completion ")).0, ["bash", "zsh", "fish"]);
    }

    #[test]
    fn file_names_are_offered_where_a_package_goes() {
        let (found, files) = candidates(&words("install ./oper"));
        assert!(found.is_empty());
        assert!(files);
        let (_, files) = candidates(&words("update --instance "));
        assert!(!files, "an Instance name is no file");
        let (_, files) = candidates(&words("update -P "));
        assert!(files, "a parameter file is");
    }
}
