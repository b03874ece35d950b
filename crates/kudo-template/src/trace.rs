//! Where output text comes from. A render can tell the text the template
//! wrote (its literal text, and actions that use nothing of `.Params`)
//! from text that carries parameter values, so that a caller can refuse a
//! value that turns into YAML structure. Values are followed through
//! variables, dot, `range`, `with`, `template` calls and every function: a
//! function's result carries what all its arguments carried.
//!
//! Following costs no allocation for a value that carries nothing, one
//! parameter, or the whole `.Params` map: names are borrowed from the
//! template and the data.

use std::rc::Rc;

/// The root field whose values are traced.
pub const TRACED_ROOT: &str = "Params";

/// Functions whose result is YAML (or JSON) text the template asked for on
/// purpose: the template placed a fragment, not a scalar.
const FRAGMENT_FUNCS: &[&str] = &["toYaml", "toJson", "toPrettyJson", "indent", "nindent"];

/// A piece of output that carries parameter values.
#[derive(Debug, Clone)]
pub struct ValueText<'a> {
    /// Byte offset of the first byte in the output.
    pub start: usize,
    /// Byte offset just past the last byte.
    pub end: usize,
    /// 1-based line of the action in the template that wrote it.
    pub line: usize,
    pub(crate) taint: Taint<'a>,
}

impl<'a> ValueText<'a> {
    /// Names of the parameters it carries; empty when it carries the whole
    /// `.Params` map (or a parameter chosen at render time).
    pub fn params(&self) -> Vec<&'a str> {
        match &self.taint {
            Taint::Clean | Taint::All { .. } => Vec::new(),
            Taint::One { name, .. } => vec![name],
            Taint::Many(origin) if origin.all => Vec::new(),
            Taint::Many(origin) => origin.params.clone(),
        }
    }

    /// It went through `toYaml`, `toJson`, `toPrettyJson`, `indent` or
    /// `nindent`: YAML text the template placed as a fragment.
    pub fn fragment(&self) -> bool {
        self.taint.is_fragment()
    }
}

/// What a value carries: nothing (template text), or some parameters.
#[derive(Debug, Clone, Default)]
pub(crate) enum Taint<'a> {
    /// Template text.
    #[default]
    Clean,
    /// One parameter.
    One { name: &'a str, fragment: bool },
    /// The whole `.Params` map.
    All { fragment: bool },
    /// Several parameters.
    Many(Rc<Origin<'a>>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Origin<'a> {
    /// Parameter names, sorted, without repeats.
    params: Vec<&'a str>,
    /// The whole `.Params` map is among them.
    all: bool,
    /// Passed through a fragment function.
    fragment: bool,
}

impl<'a> Taint<'a> {
    /// Carries nothing.
    pub(crate) fn clean() -> Self {
        Taint::Clean
    }

    /// Carries one parameter.
    pub(crate) fn param(name: &'a str) -> Self {
        Taint::One {
            name,
            fragment: false,
        }
    }

    /// Carries the whole `.Params` map.
    pub(crate) fn all_params() -> Self {
        Taint::All { fragment: false }
    }

    #[cfg(test)]
    pub(crate) fn is_clean(&self) -> bool {
        matches!(self, Taint::Clean)
    }

    fn is_fragment(&self) -> bool {
        match self {
            Taint::Clean => false,
            Taint::One { fragment, .. } | Taint::All { fragment } => *fragment,
            Taint::Many(origin) => origin.fragment,
        }
    }

    fn origin(&self) -> Origin<'a> {
        match self {
            Taint::Clean => Origin {
                params: Vec::new(),
                all: false,
                fragment: false,
            },
            Taint::One { name, fragment } => Origin {
                params: vec![name],
                all: false,
                fragment: *fragment,
            },
            Taint::All { fragment } => Origin {
                params: Vec::new(),
                all: true,
                fragment: *fragment,
            },
            Taint::Many(origin) => Origin::clone(origin),
        }
    }

    /// What both carry. A fragment stays a fragment only if every tainted
    /// side is one.
    pub(crate) fn union(&self, other: &Taint<'a>) -> Taint<'a> {
        let fragment = self.is_fragment() && other.is_fragment();
        match (self, other) {
            (Taint::Clean, _) => other.clone(),
            (_, Taint::Clean) => self.clone(),
            (Taint::One { name: a, .. }, Taint::One { name: b, .. }) if a == b => {
                Taint::One { name: a, fragment }
            }
            (Taint::All { .. }, _) | (_, Taint::All { .. }) => Taint::All { fragment },
            (Taint::Many(a), Taint::Many(b)) if Rc::ptr_eq(a, b) => self.clone(),
            _ => {
                let (mut a, b) = (self.origin(), other.origin());
                a.params.extend(b.params);
                a.params.sort_unstable();
                a.params.dedup();
                a.all |= b.all;
                a.fragment = fragment;
                Taint::Many(Rc::new(a))
            }
        }
    }

    /// The result of calling `func` on arguments that carried `self`.
    pub(crate) fn through(self, func: &str) -> Taint<'a> {
        if !FRAGMENT_FUNCS.contains(&func) {
            return self;
        }
        match self {
            Taint::Clean => Taint::Clean,
            Taint::One { name, .. } => Taint::One {
                name,
                fragment: true,
            },
            Taint::All { .. } => Taint::All { fragment: true },
            Taint::Many(origin) => {
                let mut origin = Rc::unwrap_or_clone(origin);
                origin.fragment = true;
                Taint::Many(Rc::new(origin))
            }
        }
    }

    /// The record of output `start..end`.
    pub(crate) fn text(&self, start: usize, end: usize) -> Option<ValueText<'a>> {
        if matches!(self, Taint::Clean) {
            return None;
        }
        Some(ValueText {
            start,
            end,
            line: 0,
            taint: self.clone(),
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
        let both = a.union(&b).text(0, 1).unwrap();
        assert_eq!(both.params(), vec!["A", "B"]);
        assert!(!both.fragment());
        let frag = a.union(&Taint::clean()).text(0, 1).unwrap();
        assert!(frag.fragment());
    }

    #[test]
    fn the_whole_params_map_names_no_single_parameter() {
        let t = Taint::param("A").union(&Taint::all_params());
        assert_eq!(t.text(0, 1).unwrap().params(), Vec::<&str>::new());
    }

    #[test]
    fn clean_text_is_not_recorded() {
        assert!(Taint::clean().text(0, 1).is_none());
        assert!(Taint::clean().through("toYaml").is_clean());
    }
}
