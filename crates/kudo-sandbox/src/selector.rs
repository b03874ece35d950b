//! Label and field selectors for list and watch.

use serde_json::Value;

use crate::status::ApiError;

#[derive(Debug, Clone, PartialEq)]
enum LabelReq {
    Eq(String, String),
    NotEq(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label selector (`app=web,tier in (a,b),!legacy`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector(Vec<LabelReq>);

/// Splits on commas that are not inside parentheses.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out.into_iter()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect()
}

fn set_values(rest: &str, selector: &str) -> Result<Vec<String>, ApiError> {
    let inner = rest
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| ApiError::bad_request(format!("unable to parse requirement: expected parenthesised values in label selector {selector:?}")))?;
    Ok(inner
        .split(',')
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect())
}

impl LabelSelector {
    /// Parses the `labelSelector` query parameter.
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        for part in split_top_level(s) {
            let req = if let Some(key) = part.strip_prefix('!') {
                LabelReq::NotExists(key.trim().to_string())
            } else if let Some((k, v)) = part.split_once("!=") {
                LabelReq::NotEq(k.trim().to_string(), v.trim().to_string())
            } else if let Some((k, v)) = part.split_once("==") {
                LabelReq::Eq(k.trim().to_string(), v.trim().to_string())
            } else if let Some((k, v)) = part.split_once('=') {
                LabelReq::Eq(k.trim().to_string(), v.trim().to_string())
            } else if let Some((k, rest)) = part.split_once(" notin ") {
                LabelReq::NotIn(k.trim().to_string(), set_values(rest, s)?)
            } else if let Some((k, rest)) = part.split_once(" in ") {
                LabelReq::In(k.trim().to_string(), set_values(rest, s)?)
            } else if part.contains(char::is_whitespace) || part.contains('(') {
                return Err(ApiError::bad_request(format!(
                    "unable to parse requirement {part:?} in label selector {s:?}"
                )));
            } else {
                LabelReq::Exists(part.to_string())
            };
            reqs.push(req);
        }
        Ok(Self(reqs))
    }

    /// Whether an object's labels satisfy every requirement.
    pub fn matches(&self, obj: &Value) -> bool {
        let labels = &obj["metadata"]["labels"];
        let get = |k: &str| labels.get(k).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            LabelReq::Eq(k, v) => get(k) == Some(v.as_str()),
            LabelReq::NotEq(k, v) => get(k) != Some(v.as_str()),
            LabelReq::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelReq::NotIn(k, vs) => get(k).is_none_or(|x| vs.iter().all(|v| v != x)),
            LabelReq::Exists(k) => get(k).is_some(),
            LabelReq::NotExists(k) => get(k).is_none(),
        })
    }
}

/// Whether `labels` satisfy a `metav1.LabelSelector` object (`matchLabels`
/// and `matchExpressions`, as in PodDisruptionBudgets). A missing selector
/// matches nothing, an empty one everything, as in policy/v1.
pub fn selector_matches(selector: &Value, labels: &Value) -> bool {
    if !selector.is_object() {
        return false;
    }
    let get = |k: &str| labels.get(k).and_then(Value::as_str);
    let equal = selector["matchLabels"]
        .as_object()
        .is_none_or(|m| m.iter().all(|(k, v)| get(k) == v.as_str()));
    let exprs = selector["matchExpressions"].as_array();
    equal
        && exprs.is_none_or(|es| {
            es.iter().all(|e| {
                let key = e["key"].as_str().unwrap_or_default();
                let values: Vec<&str> = e["values"]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                match e["operator"].as_str() {
                    Some("In") => get(key).is_some_and(|v| values.contains(&v)),
                    Some("NotIn") => get(key).is_none_or(|v| !values.contains(&v)),
                    Some("Exists") => get(key).is_some(),
                    Some("DoesNotExist") => get(key).is_none(),
                    _ => false,
                }
            })
        })
}

/// A parsed field selector: `a.b=x,c!=y` over dotted paths of the object.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector(Vec<(Vec<String>, bool, String)>);

impl FieldSelector {
    /// Parses the `fieldSelector` query parameter.
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        let mut reqs = Vec::new();
        for part in split_top_level(s) {
            let (path, negate, value) = if let Some((k, v)) = part.split_once("!=") {
                (k, true, v)
            } else if let Some((k, v)) = part.split_once("==") {
                (k, false, v)
            } else if let Some((k, v)) = part.split_once('=') {
                (k, false, v)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: {s:?}; field selectors support only =, == and != (in {part:?})"
                )));
            };
            let path = path.trim().split('.').map(str::to_string).collect();
            reqs.push((path, negate, value.trim().to_string()));
        }
        Ok(Self(reqs))
    }

    /// The name `metadata.name=X` pins the selection to, if any: lists and
    /// watches then skip other objects by key before matching values.
    pub fn pinned_name(&self) -> Option<&str> {
        self.0
            .iter()
            .find(|(path, negate, _)| {
                !negate && path.len() == 2 && path[0] == "metadata" && path[1] == "name"
            })
            .map(|(_, _, want)| want.as_str())
    }

    /// Whether every requirement holds; missing fields compare as "".
    pub fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|(path, negate, want)| {
            let mut cur = obj;
            for seg in path {
                cur = cur.get(seg).unwrap_or(&Value::Null);
            }
            let actual = match cur {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            (actual == *want) != *negate
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj() -> Value {
        json!({"metadata": {"name": "a", "namespace": "ns", "labels": {"app": "web", "tier": "front"}},
               "involvedObject": {"name": "web-1", "kind": "Pod"}})
    }

    #[test]
    fn label_selector_supports_equality_sets_and_existence() {
        assert!(
            LabelSelector::parse("app=web,tier in (front, back)")
                .unwrap()
                .matches(&obj())
        );
        assert!(!LabelSelector::parse("app!=web").unwrap().matches(&obj()));
        assert!(LabelSelector::parse("!legacy,app").unwrap().matches(&obj()));
        assert!(
            !LabelSelector::parse("tier notin (front)")
                .unwrap()
                .matches(&obj())
        );
        assert!(LabelSelector::parse("").unwrap().matches(&obj()));
    }

    #[test]
    fn field_selector_follows_dotted_paths() {
        assert!(
            FieldSelector::parse("metadata.name=a,involvedObject.name=web-1")
                .unwrap()
                .matches(&obj())
        );
        assert!(
            !FieldSelector::parse("involvedObject.kind!=Pod")
                .unwrap()
                .matches(&obj())
        );
        assert!(
            FieldSelector::parse("involvedObject.uid=")
                .unwrap()
                .matches(&obj())
        );
    }

    #[test]
    fn only_a_name_equality_pins_the_name() {
        let pinned = |s: &str| {
            FieldSelector::parse(s)
                .unwrap()
                .pinned_name()
                .map(str::to_string)
        };
        assert_eq!(
            pinned("status.phase=Running,metadata.name=a"),
            Some("a".into())
        );
        assert_eq!(pinned("metadata.name==b"), Some("b".into()));
        assert_eq!(pinned("metadata.name!=a"), None);
        assert_eq!(pinned("metadata.namespace=a"), None);
        assert_eq!(pinned(""), None);
    }

    #[test]
    fn label_selector_objects_match_labels_and_expressions() {
        let labels = json!({"app": "web", "tier": "front"});
        assert!(selector_matches(&json!({}), &labels));
        assert!(!selector_matches(&Value::Null, &labels));
        assert!(selector_matches(
            &json!({"matchLabels": {"app": "web"}, "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["front", "back"]},
                {"key": "legacy", "operator": "DoesNotExist"}]}),
            &labels
        ));
        assert!(!selector_matches(
            &json!({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["front"]}]}),
            &labels
        ));
        assert!(!selector_matches(
            &json!({"matchLabels": {"app": "db"}}),
            &labels
        ));
    }

    #[test]
    fn malformed_selectors_are_bad_requests() {
        assert_eq!(LabelSelector::parse("app in web").unwrap_err().code, 400);
        assert_eq!(FieldSelector::parse("metadata.name").unwrap_err().code, 400);
    }
}
