//! `kubectl kudo` command lines in messages (blockers, webhook refusals,
//! CLI notes). Each one must run as printed: it names the Instance and its
//! namespace, and quotes a word the shell would split.

use std::fmt;

/// A `kubectl kudo` command for one Instance, e.g. `kubectl kudo plan
/// resume --instance zk --plan reconfigure -n default`.
#[derive(Clone, Debug)]
pub struct KudoCommand<'a> {
    command: &'a str,
    instance: &'a str,
    flags: Vec<(&'a str, Option<&'a str>)>,
    namespace: Option<&'a str>,
}

impl<'a> KudoCommand<'a> {
    /// `kubectl kudo COMMAND --instance INSTANCE`.
    pub fn new(command: &'a str, instance: &'a str) -> Self {
        Self {
            command,
            instance,
            flags: Vec::new(),
            namespace: None,
        }
    }

    /// Adds `FLAG VALUE` (in the order given).
    #[must_use]
    pub fn flag(mut self, flag: &'a str, value: &'a str) -> Self {
        self.flags.push((flag, Some(value)));
        self
    }

    /// Adds a flag without a value, such as `--wait`.
    #[must_use]
    pub fn switch(mut self, flag: &'a str) -> Self {
        self.flags.push((flag, None));
        self
    }

    /// Adds `FLAG VALUE` when there is a value.
    #[must_use]
    pub fn flag_if(self, flag: &'a str, value: Option<&'a str>) -> Self {
        match value {
            Some(v) => self.flag(flag, v),
            None => self,
        }
    }

    /// Ends the command with `-n NAMESPACE` (messages read far from the
    /// Instance, such as a status, always name it).
    #[must_use]
    pub fn namespace(mut self, namespace: &'a str) -> Self {
        self.namespace = Some(namespace);
        self
    }
}

impl fmt::Display for KudoCommand<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "kubectl kudo {} --instance {}",
            self.command,
            ShellWord(self.instance)
        )?;
        for (flag, value) in &self.flags {
            match value {
                Some(value) => write!(f, " {flag} {}", ShellWord(value))?,
                None => write!(f, " {flag}")?,
            }
        }
        if let Some(ns) = self.namespace {
            write!(f, " -n {}", ShellWord(ns))?;
        }
        Ok(())
    }
}

/// A word as a POSIX shell reads it back: plain when it holds only
/// characters the shell leaves alone, else in single quotes.
#[derive(Clone, Copy, Debug)]
pub struct ShellWord<'a>(pub &'a str);

impl fmt::Display for ShellWord<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plain = !self.0.is_empty()
            && self
                .0
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@%+".contains(&b));
        if plain {
            return f.write_str(self.0);
        }
        f.write_str("'")?;
        f.write_str(&self.0.replace('\'', r"'\''"))?;
        f.write_str("'")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_names_instance_flags_and_namespace_in_order() {
        let text = KudoCommand::new("plan continue", "site")
            .flag("--plan", "deploy")
            .flag("--phase", "rollout")
            .switch("--wait")
            .namespace("default")
            .to_string();
        assert_eq!(
            text,
            "kubectl kudo plan continue --instance site --plan deploy --phase rollout --wait -n default"
        );
    }

    #[test]
    fn words_the_shell_would_split_are_quoted() {
        let text = KudoCommand::new("plan resume", "zk")
            .flag("--phase", "Deployment ns/web")
            .flag("--reason", "it's")
            .to_string();
        assert_eq!(
            text,
            r"kubectl kudo plan resume --instance zk --phase 'Deployment ns/web' --reason 'it'\''s'"
        );
        assert_eq!(ShellWord("").to_string(), "''");
    }
}
