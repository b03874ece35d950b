//! Where output text comes from. A render can tell the text the template
//! wrote (its literal text, and actions that use nothing of `.Params`)
//! from text that carries parameter values, so that a caller can refuse a
//! value that turns into YAML structure. Values are followed through
//! variables, dot, `range`, `with`, `template` calls and every function: a
//! function's result carries what all its arguments carried.

use std::collections::BTreeSet;
use std::rc::Rc;

/// The root field whose values are traced.
pub const TRACED_ROOT: &str = "Params";

/// Functions whose result is YAML (or JSON) text the template asked for on
/// purpose: the template placed a fragment, not a scalar.
const FRAGMENT_FUNCS: &[&str] = &["toYaml", "toJson", "toPrettyJson", "indent", "nindent"];

/// A piece of output that carries parameter values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueText {
    /// Byte offset of the first byte in the output.
    pub start: usize,
    /// Byte offset just past the last byte.
    pub end: usize,
    /// Names of the parameters it carries; empty when it carries the whole
    /// `.Params` map (or a parameter chosen at render time).
    pub params: Vec<String>,
    /// It went through `toYaml`, `toJson`, `toPrettyJson`, `indent` or
    /// `nindent`: YAML text the template placed as a fragment.
    pub fragment: bool,
    /// 1-based line of the action in the template that wrote it.
    pub line: usize,
}

/// What a value carries: nothing (template text), or some parameters.
#[derive(Debug, Clone, Default)]
pub(crate) struct Taint(Option<Rc<Origin>>);

#[derive(Debug, Clone, PartialEq, Eq)]
struct Origin {
    /// Parameter names; empty together with `all`.
    params: BTreeSet<String>,
    /// The whole `.Params` map, or a name not known statically.
    all: bool,
    /// Passed through a fragment function.
    fragment: bool,
}

impl Taint {
    /// Carries nothing.
    pub(crate) fn clean() -> Self {
        Self(None)
    }

    /// Carries one parameter.
    pub(crate) fn param(name: &str) -> Self {
        Self(Some(Rc::new(Origin {
            params: BTreeSet::from([name.to_string()]),
            all: false,
            fragment: false,
        })))
    }

    /// Carries the whole `.Params` map.
    pub(crate) fn all_params() -> Self {
        Self(Some(Rc::new(Origin {
            params: BTreeSet::new(),
            all: true,
            fragment: false,
        })))
    }

    #[cfg(test)]
    pub(crate) fn is_clean(&self) -> bool {
        self.0.is_none()
    }

    /// What both carry. A fragment stays a fragment only if every tainted
    /// side is one.
    pub(crate) fn union(&self, other: &Taint) -> Taint {
        match (&self.0, &other.0) {
            (None, _) => other.clone(),
            (_, None) => self.clone(),
            (Some(a), Some(b)) if Rc::ptr_eq(a, b) || a == b => self.clone(),
            (Some(a), Some(b)) => {
                let all = a.all || b.all;
                let params = if all {
                    BTreeSet::new()
                } else {
                    a.params.union(&b.params).cloned().collect()
                };
                Taint(Some(Rc::new(Origin {
                    params,
                    all,
                    fragment: a.fragment && b.fragment,
                })))
            }
        }
    }

    /// The result of calling `func` on arguments that carried `self`.
    pub(crate) fn through(self, func: &str) -> Taint {
        match self.0 {
            Some(origin) if !origin.fragment && FRAGMENT_FUNCS.contains(&func) => {
                let mut origin = Rc::unwrap_or_clone(origin);
                origin.fragment = true;
                Taint(Some(Rc::new(origin)))
            }
            other => Taint(other),
        }
    }

    /// The record of output `start..end` written by an action at `line`.
    pub(crate) fn text(&self, start: usize, end: usize, line: usize) -> Option<ValueText> {
        let origin = self.0.as_ref()?;
        Some(ValueText {
            start,
            end,
            params: if origin.all {
                Vec::new()
            } else {
                origin.params.iter().cloned().collect()
            },
            fragment: origin.fragment,
            line,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_union_names_both_parameters_and_stays_a_fragment_only_if_both_are() {
        let a = Taint::param("A").through("toYaml");
        let b = Taint::param("B");
        let both = a.union(&b).text(0, 1, 1).unwrap();
        assert_eq!(both.params, vec!["A".to_string(), "B".to_string()]);
        assert!(!both.fragment);
        let frag = a.union(&Taint::clean()).text(0, 1, 1).unwrap();
        assert!(frag.fragment);
    }

    #[test]
    fn the_whole_params_map_names_no_single_parameter() {
        let t = Taint::param("A").union(&Taint::all_params());
        assert_eq!(t.text(0, 1, 1).unwrap().params, Vec::<String>::new());
    }

    #[test]
    fn clean_text_is_not_recorded() {
        assert!(Taint::clean().text(0, 1, 1).is_none());
        assert!(Taint::clean().through("toYaml").is_clean());
    }
}
