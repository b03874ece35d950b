//! A webhook's `matchConditions` (CEL expressions that must all hold for
//! the API server to call it). The sandbox has no CEL: it evaluates the
//! one form kudo-rs registers, a comparison of the requesting user's name,
//! and treats any other expression as an evaluation error, which the
//! webhook's failurePolicy then decides, as kube-apiserver does for an
//! expression that fails (Fail: the request is forbidden before any
//! webhook is called; Ignore: that webhook is skipped).

use serde_json::Value;

/// Whether the webhook is called: `Ok(true)` when every condition holds,
/// `Ok(false)` when one is false (the webhook is skipped, even if another
/// one could not be evaluated), `Err` naming what could not be evaluated.
pub fn webhook_applies(conditions: &Value, username: &str) -> Result<bool, String> {
    let Some(list) = conditions.as_array() else {
        return Ok(true);
    };
    let mut failure = None;
    for condition in list {
        let expression = condition["expression"].as_str().unwrap_or_default();
        match evaluate(expression, username) {
            Ok(false) => return Ok(false),
            Ok(true) => {}
            Err(why) => {
                failure.get_or_insert_with(|| {
                    format!(
                        "matchCondition {:?}: {why}",
                        condition["name"].as_str().unwrap_or_default()
                    )
                });
            }
        }
    }
    failure.map_or(Ok(true), Err)
}

/// `request.userInfo.username == 'x'` or `!= 'x'` (either quote).
fn evaluate(expression: &str, username: &str) -> Result<bool, String> {
    let unsupported = || {
        format!(
            "kudo-sandbox evaluates only `request.userInfo.username == 'name'` or `!= 'name'`, \
             not {expression:?}"
        )
    };
    let rest = expression
        .trim()
        .strip_prefix("request.userInfo.username")
        .ok_or_else(unsupported)?
        .trim_start();
    let (equal, literal) = if let Some(literal) = rest.strip_prefix("==") {
        (true, literal)
    } else if let Some(literal) = rest.strip_prefix("!=") {
        (false, literal)
    } else {
        return Err(unsupported());
    };
    let literal = literal.trim();
    let quoted = |q: char| {
        literal
            .strip_prefix(q)
            .and_then(|l| l.strip_suffix(q))
            .filter(|inner| !inner.contains(q) && !inner.contains('\\'))
    };
    let name = quoted('\'')
        .or_else(|| quoted('"'))
        .ok_or_else(unsupported)?;
    Ok((name == username) == equal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn conditions(expressions: &[&str]) -> Value {
        Value::Array(
            expressions
                .iter()
                .enumerate()
                .map(|(i, e)| json!({"name": format!("c{i}"), "expression": e}))
                .collect(),
        )
    }

    #[test]
    fn a_webhook_without_conditions_applies() {
        assert_eq!(webhook_applies(&Value::Null, "anyone"), Ok(true));
    }

    #[test]
    fn a_username_comparison_decides_whether_the_webhook_is_called() {
        let not_manager = conditions(&[
            "request.userInfo.username != 'system:serviceaccount:kudo-system:kudo-manager'",
        ]);
        assert_eq!(webhook_applies(&not_manager, "mallory"), Ok(true));
        assert_eq!(
            webhook_applies(
                &not_manager,
                "system:serviceaccount:kudo-system:kudo-manager"
            ),
            Ok(false)
        );
        let only_alice = conditions(&["request.userInfo.username == \"alice\""]);
        assert_eq!(webhook_applies(&only_alice, "alice"), Ok(true));
        assert_eq!(webhook_applies(&only_alice, "bob"), Ok(false));
    }

    #[test]
    fn another_expression_is_an_error_unless_a_condition_is_false() {
        let odd = conditions(&["has(request.userInfo.extra)"]);
        let err = webhook_applies(&odd, "alice").unwrap_err();
        assert!(err.contains("c0") && err.contains("has(request"), "{err}");
        let false_first = conditions(&["request.userInfo.username == 'bob'", "size(x) > 1"]);
        assert_eq!(webhook_applies(&false_first, "alice"), Ok(false));
        let unquoted = conditions(&["request.userInfo.username == alice"]);
        assert!(webhook_applies(&unquoted, "alice").is_err());
    }
}
