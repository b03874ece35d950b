//! Objects come from templates, not from parameter values. A value the
//! template writes as it is must stay one YAML scalar: the rendered text
//! must have the same YAML structure (documents, mappings, keys, lists,
//! comments, anchors, aliases, tags) as the same text with every such value
//! replaced by a placeholder. A value the template turned into YAML on
//! purpose (`toYaml`, `toJson`, `toPrettyJson`, `indent`, `nindent`) may
//! add keys and items where the template put it. No value, either way, may
//! start or end a document, or give an object its `apiVersion`, `kind` or
//! `metadata.namespace` — except a namespace that is the Instance's own,
//! which the enhancer writes there anyway (old packages take it from a
//! parameter).

use std::ops::Range;

use granit_parser::{Event, Parser};
use kudo_template::{Rendered, ValueText};

use skeleton::{Token, byte_range, skeleton};

/// What the rendered text is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// Kubernetes objects: the `apiVersion`/`kind`/`metadata.namespace`
    /// rule applies.
    Objects,
    /// A map of values (a KudoOperator task's parameter file).
    Values,
}

/// A value that would change what the template builds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Injection {
    /// The parameters the offending text carries (empty: `.Params` as a whole).
    pub params: Vec<String>,
    /// 1-based line of the template action that wrote it.
    pub line: usize,
    /// What it does ("starts a new YAML document").
    pub what: String,
    /// What to do instead.
    pub fix: &'static str,
}

impl Injection {
    /// `parameter GREETING starts a new YAML document in t.yaml:6; quote it or use toYaml`.
    pub(crate) fn describe(&self, template: &str) -> String {
        let who = match self.params.as_slice() {
            [] => "a parameter value".to_string(),
            [one] => format!("parameter {one}"),
            many => format!("parameters {}", many.join(", ")),
        };
        format!(
            "{who} {} in {template}:{}; {}",
            self.what, self.line, self.fix
        )
    }
}

const QUOTE_IT: &str = "quote it or use toYaml";
const FROM_TEMPLATE: &str =
    "an object's apiVersion, kind and metadata.namespace must come from the template text";

/// Stands in for a value: one plain character, a scalar anywhere a value
/// can stand (plain, quoted, block, key, comment).
const PLACEHOLDER: &str = "x";

/// Checks that the values in `rendered` stay values; `namespace` is the
/// Instance's.
pub(crate) fn check(
    rendered: &Rendered<'_>,
    shape: Shape,
    namespace: &str,
) -> Result<(), Injection> {
    if rendered.values.is_empty() {
        return Ok(());
    }
    let text = rendered.text.as_str();
    let values = &rendered.values;
    // Most values are plain words: they cannot change the structure, and
    // only their line tells whether they sit where an object's identity is.
    // A comma separates items only inside a flow collection (`[`, `{`).
    let flow = text.contains(['[', '{']);
    if values.iter().all(|v| cannot_matter(text, v, flow)) {
        return Ok(());
    }
    check_raw_structure(text, values)?;
    check_places(text, values, shape, namespace)
}

/// Whether a value, where it stands, can neither change the YAML structure
/// nor be (part of) a document marker, an `apiVersion`, a `kind` or a
/// namespace: a raw value of "word" characters not at a line of those keys,
/// or a fragment that names none of them. Anything else is checked in full.
fn cannot_matter(text: &str, v: &ValueText<'_>, flow: bool) -> bool {
    let piece = &text[v.start..v.end];
    if v.fragment() {
        // A backslash may spell a word in an escape (`"\u006bind"`).
        return !["apiVersion", "kind", "namespace", "<<", "---", "...", "\\"]
            .iter()
            .any(|word| piece.contains(word));
    }
    let word = |c: char| c.is_ascii_alphanumeric() || "_./=+-:".contains(c) || (c == ',' && !flow);
    // `-1` is a number, `-` alone or `--` may start an item or a marker.
    let plain = piece.chars().all(word)
        && !piece.starts_with(['.', ':'])
        && !(piece.starts_with('-') && (piece.len() == 1 || piece.starts_with("--")))
        && !piece.ends_with(':');
    // A whole quoted scalar (what `quote` and `squote` make of words) whose
    // inside can neither end it nor, next to a quote of the template's,
    // start a comment or a collection.
    let quoted = piece.len() >= 2
        && ["\"", "'"]
            .iter()
            .any(|q| piece.starts_with(q) && piece.ends_with(q))
        && piece[1..piece.len() - 1]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || " _./=+-:,@%".contains(c));
    let inert = plain || quoted;
    if !inert {
        return false;
    }
    // The line up to the value, or the line before when the value starts
    // its line: a key the value could be the value of, also in a flow
    // mapping (`{apiVersion: v1, kind: VALUE}`).
    let line_start = text[..v.start].rfind('\n').map_or(0, |i| i + 1);
    let mut before = &text[line_start..v.start];
    if matches!(before.trim(), "" | "-") {
        let above = text[..line_start.saturating_sub(1)]
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty());
        before = above.unwrap_or_default();
    }
    let identity = |t: &str| {
        ["apiVersion", "kind", "namespace"]
            .iter()
            .any(|k| t.contains(k))
    };
    !identity(before) && !identity(piece)
}

/// Raw values must leave the structure as the template wrote it.
fn check_raw_structure(text: &str, values: &[ValueText<'_>]) -> Result<(), Injection> {
    let raw: Vec<&ValueText<'_>> = values.iter().filter(|v| !v.fragment()).collect();
    if raw.is_empty() {
        return Ok(());
    }
    let mut stand_in = String::with_capacity(text.len());
    // Where each placeholder starts in the stand-in text.
    let mut placed = Vec::with_capacity(raw.len());
    let mut at = 0;
    for v in &raw {
        stand_in.push_str(&text[at..v.start]);
        placed.push(stand_in.len());
        stand_in.push_str(PLACEHOLDER);
        at = v.end;
    }
    stand_in.push_str(&text[at..]);

    let expected = match skeleton(&stand_in) {
        Ok(shape) => shape,
        // Without its values the template's text is not valid YAML: a value
        // is what makes it YAML, which values may not do.
        Err(_) => {
            let first = raw[0];
            return Err(injection(
                first,
                "is needed to make the template's YAML valid",
                QUOTE_IT,
            ));
        }
    };
    let actual = match skeleton(text) {
        Ok(shape) => shape,
        Err((message, at)) => {
            let culprit = culprit(&raw, at);
            return Err(injection(
                culprit,
                &format!("makes the YAML invalid ({message})"),
                QUOTE_IT,
            ));
        }
    };
    let differs = actual
        .iter()
        .zip(&expected)
        .position(|(a, e)| a.0 != e.0)
        .or((actual.len() != expected.len()).then(|| actual.len().min(expected.len())));
    let Some(index) = differs else {
        // The same tokens, and each must be where the template put it: a
        // value that closes a quote of the template's and opens another
        // keeps the tokens while moving template text into a scalar.
        let to_stand_in = |at: usize| stand_in_offset(&raw, &placed, at);
        let moved = actual
            .iter()
            .zip(&expected)
            .find(|(a, e)| to_stand_in(a.1.start) != e.1.start || to_stand_in(a.1.end) != e.1.end);
        return match moved {
            None => Ok(()),
            Some((a, _)) => Err(injection(
                culprit(&raw, a.1.start),
                "takes template text into a value (it closes a quote the template opened)",
                QUOTE_IT,
            )),
        };
    };
    let (token, at) = match actual.get(index) {
        Some((token, range)) => (*token, range.start),
        None => (Token::End, text.len()),
    };
    Err(injection(culprit(&raw, at), token.added(), QUOTE_IT))
}

/// Where the byte at `at` of the rendered text stands in the text with
/// each raw value replaced by [`PLACEHOLDER`] (`placed`: where each
/// placeholder starts there): template text moves by what the values
/// before it added; a place inside a value is its placeholder's start, and
/// its end the placeholder's end. A binary search: a template may hold
/// many values and many more tokens.
fn stand_in_offset(raw: &[&ValueText<'_>], placed: &[usize], at: usize) -> usize {
    let i = raw.partition_point(|v| v.end < at);
    match (raw.get(i), i.checked_sub(1)) {
        (Some(v), _) if v.start <= at => {
            placed[i] + if at == v.end { PLACEHOLDER.len() } else { 0 }
        }
        (_, Some(before)) => placed[before] + PLACEHOLDER.len() + (at - raw[before].end),
        (_, None) => at,
    }
}

/// The raw value that most likely made the structure differ at `at`: the
/// one containing it, else the last one before it.
fn culprit<'v, 'a>(raw: &[&'v ValueText<'a>], at: usize) -> &'v ValueText<'a> {
    raw.iter()
        .rev()
        .find(|v| v.start <= at)
        .or(raw.first())
        .copied()
        .unwrap_or(raw[0])
}

fn injection(v: &ValueText<'_>, what: &str, fix: &'static str) -> Injection {
    Injection {
        params: v.params().into_iter().map(String::from).collect(),
        line: v.line,
        what: what.to_string(),
        fix,
    }
}

/// No value may mark a document or give an object its identity.
fn check_places(
    text: &str,
    values: &[ValueText<'_>],
    shape: Shape,
    namespace: &str,
) -> Result<(), Injection> {
    let overlapping = |range: &Range<usize>| {
        values
            .iter()
            .find(|v| v.start < range.end.max(range.start + 1) && range.start < v.end)
    };
    // Only the events are needed here; a text that does not parse is
    // reported by the YAML parser after this check.
    let Ok(events) = events(text) else {
        return Ok(());
    };
    let mut walk = Walk::default();
    for (event, range) in &events {
        match event {
            Ev::DocumentStart(true) | Ev::DocumentEnd(true) => {
                if let Some(v) = overlapping(range) {
                    return Err(injection(v, "starts a new YAML document", QUOTE_IT));
                }
            }
            Ev::Key(key) if shape == Shape::Objects => {
                if let Some(field) = walk.identity_field(key)
                    && let Some(v) = overlapping(range)
                {
                    return Err(injection(
                        v,
                        &format!("writes the {field} key"),
                        FROM_TEMPLATE,
                    ));
                }
            }
            _ => {}
        }
        if shape == Shape::Objects
            && let Some(field) = walk.value_of_identity(event)
            && let Some(v) = overlapping(range)
            && !(field == "metadata.namespace" && *event == Ev::Value(Some(namespace.to_string())))
        {
            return Err(injection(v, &format!("sets {field}"), FROM_TEMPLATE));
        }
        if let Ev::Key(key) = event
            && key == "<<"
            && let Some(v) = overlapping(range)
        {
            return Err(injection(v, "adds a YAML merge key", QUOTE_IT));
        }
        walk.advance(event);
    }
    Ok(())
}

/// The events `check_places` needs, with the byte range of each node
/// (a collection spans from its start to its end).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Ev {
    DocumentStart(bool),
    DocumentEnd(bool),
    /// A scalar in a mapping's key position.
    Key(String),
    /// A whole value node: a scalar (with its value), or an alias.
    Value(Option<String>),
    Open,
    Close,
}

fn events(text: &str) -> Result<Vec<(Ev, Range<usize>)>, ()> {
    // Per open collection: is it a mapping, is the next node a key, and the
    // index of its own Open event.
    let mut stack: Vec<(bool, bool, usize)> = Vec::new();
    let mut out: Vec<(Ev, Range<usize>)> = Vec::new();
    for event in Parser::new_from_str(text) {
        let (event, span) = event.map_err(|_| ())?;
        let range = byte_range(&span);
        let in_key_position = stack.last().is_some_and(|(map, key, _)| *map && *key);
        let mut node_done = false;
        match event {
            Event::DocumentStart(explicit, _) => out.push((Ev::DocumentStart(explicit), range)),
            Event::DocumentEnd => {
                let explicit = !range.is_empty();
                out.push((Ev::DocumentEnd(explicit), range));
            }
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                let is_map = matches!(event, Event::MappingStart(..));
                out.push((Ev::Open, range));
                stack.push((is_map, true, out.len() - 1));
            }
            Event::MappingEnd | Event::SequenceEnd => {
                if let Some((_, _, open)) = stack.pop() {
                    // The collection as one node: from its start to its end.
                    let start = out[open].1.start;
                    out.push((Ev::Close, start..range.end.max(start)));
                }
                node_done = true;
            }
            Event::Scalar(value, ..) if in_key_position => {
                out.push((Ev::Key(value.into_owned()), range));
                node_done = true;
            }
            Event::Scalar(value, ..) => {
                out.push((Ev::Value(Some(value.into_owned())), range));
                node_done = true;
            }
            Event::Alias(_) | Event::UnresolvedAlias(_) => {
                out.push((Ev::Value(None), range));
                node_done = true;
            }
            _ => {}
        }
        if node_done && let Some((true, key, _)) = stack.last_mut() {
            *key = !*key;
        }
    }
    Ok(out)
}

/// Where the walk over one document is: the path of mapping keys to the
/// node being read, enough to find `apiVersion`, `kind` and
/// `metadata.namespace`.
#[derive(Default)]
struct Walk {
    /// Keys of the open mappings, outermost first (`None`: a list, or a
    /// mapping whose current key is not a plain scalar key).
    path: Vec<Option<String>>,
    /// The key just read, waiting for its value.
    pending: Option<String>,
}

impl Walk {
    /// `apiVersion`, `kind` or `metadata.namespace` when `key` names one at
    /// the current place.
    fn identity_field(&self, key: &str) -> Option<&'static str> {
        let keys: Vec<Option<&str>> = self.path.iter().map(Option::as_deref).collect();
        match (keys.as_slice(), key) {
            ([None], "apiVersion") => Some("apiVersion"),
            ([None], "kind") => Some("kind"),
            ([None, Some("metadata")], "namespace") => Some("metadata.namespace"),
            _ => None,
        }
    }

    /// The identity field whose value `event` is, if any.
    fn value_of_identity(&self, event: &Ev) -> Option<&'static str> {
        let key = self.pending.as_deref()?;
        match event {
            Ev::Value(_) => self.identity_field(key),
            _ => None,
        }
    }

    fn advance(&mut self, event: &Ev) {
        match event {
            Ev::DocumentStart(_) | Ev::DocumentEnd(_) => *self = Walk::default(),
            Ev::Key(key) => self.pending = Some(key.clone()),
            Ev::Value(_) => self.pending = None,
            Ev::Open => {
                // The root mapping has no key; a nested one is entered
                // under the pending key.
                let key = self.pending.take();
                self.path.push(key);
            }
            Ev::Close => {
                self.path.pop();
                self.pending = None;
            }
        }
    }
}

#[path = "injection_skeleton.rs"]
mod skeleton;

#[cfg(test)]
#[path = "injection_tests.rs"]
mod tests;
