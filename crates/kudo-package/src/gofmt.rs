//! Go's text forms of decoded YAML values, which KUDO's conversions produce:
//! `fmt.Sprintf("%v", v)` and `strconv.FormatFloat(f, 'g', -1, 64)`.
//!
//! KUDO decodes package YAML through JSON into `interface{}`, so every number
//! is a float64 by the time it is printed: `2` prints `2`, `1000000` prints
//! `1e+06`.

use serde_json::Value;

/// `strconv.FormatFloat(f, 'g', -1, 64)` (also what `%v` prints for a float64);
/// the template engine's implementation, so both crates print floats alike.
pub use kudo_template::format_go_float as format_float_g;

/// A JSON number as Go prints the float64 it decodes to.
pub fn format_number(n: &serde_json::Number) -> String {
    format_float_g(n.as_f64().unwrap_or(0.0))
}

/// `fmt.Sprintf("%v", v)` of a value decoded from YAML/JSON into
/// `interface{}`: `<nil>`, `true`, float64 numbers, strings as is, slices as
/// `[a b]` and maps as `map[k:v]` with sorted keys.
pub fn sprint_v(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => format_number(n),
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(sprint_v).collect();
            format!("[{}]", parts.join(" "))
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{k}:{}", sprint_v(&map[k])))
                .collect();
            format!("map[{}]", parts.join(" "))
        }
    }
}

/// Every number in `value` turned into a float (what Go's JSON decoding
/// into `interface{}` does), so templates print them the Go way.
pub fn numbers_as_floats(value: Value) -> Value {
    match value {
        Value::Number(n) => n
            .as_f64()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::Null, Value::Number),
        Value::Array(items) => Value::Array(items.into_iter().map(numbers_as_floats).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, numbers_as_floats(v)))
                .collect(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_print_like_go_shortest_g() {
        let cases = [
            (2.0, "2"),
            (1.5, "1.5"),
            (100000.0, "100000"),
            (1000000.0, "1e+06"),
            (1234567.0, "1.234567e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-3.25, "-3.25"),
            (123456789.0, "1.23456789e+08"),
            (1e21, "1e+21"),
            (0.0, "0"),
        ];
        for (f, want) in cases {
            assert_eq!(format_float_g(f), want, "{f}");
        }
    }

    #[test]
    fn sprint_v_prints_go_syntax_for_collections() {
        let v = json!({"b": [1, "x"], "a": true, "c": null});
        assert_eq!(sprint_v(&v), "map[a:true b:[1 x] c:<nil>]");
        assert_eq!(sprint_v(&json!(3)), "3");
    }

    #[test]
    fn numbers_become_floats_recursively() {
        let v = numbers_as_floats(json!({"a": [80, {"b": 2}]}));
        assert!(v["a"][0].is_f64());
        assert!(v["a"][1]["b"].is_f64());
    }
}
