//! Just enough of the Kubernetes protobuf encoding to accept the objects
//! `kubectl create <generator>` sends (namespace, configmap, secret,
//! serviceaccount, deployment). Responses are always JSON, which kubectl
//! accepts. Unknown fields are skipped.

use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::status::ApiError;

/// The Content-Type of protobuf bodies.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";
const MAGIC: &[u8] = b"k8s\0";

#[derive(Clone, Copy)]
enum Ty {
    Str,
    Bytes,
    Bool,
    Int,
    Msg(&'static [Field]),
    MapStr,
    MapBytes,
    RepStr,
    RepMsg(&'static [Field]),
}

type Field = (u64, &'static str, Ty);

const TYPE_META: &[Field] = &[(1, "apiVersion", Ty::Str), (2, "kind", Ty::Str)];
const UNKNOWN: &[Field] = &[(1, "typeMeta", Ty::Msg(TYPE_META)), (2, "raw", Ty::Bytes)];
const OWNER_REF: &[Field] = &[
    (1, "kind", Ty::Str),
    (3, "name", Ty::Str),
    (4, "uid", Ty::Str),
    (5, "apiVersion", Ty::Str),
    (6, "controller", Ty::Bool),
    (7, "blockOwnerDeletion", Ty::Bool),
];
const OBJECT_META: &[Field] = &[
    (1, "name", Ty::Str),
    (2, "generateName", Ty::Str),
    (3, "namespace", Ty::Str),
    (6, "resourceVersion", Ty::Str),
    (11, "labels", Ty::MapStr),
    (12, "annotations", Ty::MapStr),
    (13, "ownerReferences", Ty::RepMsg(OWNER_REF)),
    (14, "finalizers", Ty::RepStr),
];
const NAMESPACE: &[Field] = &[(1, "metadata", Ty::Msg(OBJECT_META))];
const CONFIG_MAP: &[Field] = &[
    (1, "metadata", Ty::Msg(OBJECT_META)),
    (2, "data", Ty::MapStr),
    (3, "binaryData", Ty::MapBytes),
    (4, "immutable", Ty::Bool),
];
const SECRET: &[Field] = &[
    (1, "metadata", Ty::Msg(OBJECT_META)),
    (2, "data", Ty::MapBytes),
    (3, "type", Ty::Str),
    (4, "stringData", Ty::MapStr),
    (5, "immutable", Ty::Bool),
];
const SERVICE_ACCOUNT: &[Field] = &[(1, "metadata", Ty::Msg(OBJECT_META))];
const CONTAINER_PORT: &[Field] = &[
    (1, "name", Ty::Str),
    (3, "containerPort", Ty::Int),
    (4, "protocol", Ty::Str),
];
const ENV_VAR: &[Field] = &[(1, "name", Ty::Str), (2, "value", Ty::Str)];
const CONTAINER: &[Field] = &[
    (1, "name", Ty::Str),
    (2, "image", Ty::Str),
    (3, "command", Ty::RepStr),
    (4, "args", Ty::RepStr),
    (5, "workingDir", Ty::Str),
    (6, "ports", Ty::RepMsg(CONTAINER_PORT)),
    (7, "env", Ty::RepMsg(ENV_VAR)),
    (14, "imagePullPolicy", Ty::Str),
];
const POD_SPEC: &[Field] = &[
    (2, "containers", Ty::RepMsg(CONTAINER)),
    (3, "restartPolicy", Ty::Str),
    (8, "serviceAccountName", Ty::Str),
];
const POD_TEMPLATE: &[Field] = &[
    (1, "metadata", Ty::Msg(OBJECT_META)),
    (2, "spec", Ty::Msg(POD_SPEC)),
];
const LABEL_SELECTOR: &[Field] = &[(1, "matchLabels", Ty::MapStr)];
const DEPLOYMENT_SPEC: &[Field] = &[
    (1, "replicas", Ty::Int),
    (2, "selector", Ty::Msg(LABEL_SELECTOR)),
    (3, "template", Ty::Msg(POD_TEMPLATE)),
];
const DEPLOYMENT: &[Field] = &[
    (1, "metadata", Ty::Msg(OBJECT_META)),
    (2, "spec", Ty::Msg(DEPLOYMENT_SPEC)),
];

fn schema_for(api_version: &str, kind: &str) -> Option<&'static [Field]> {
    match (api_version, kind) {
        ("v1", "Namespace") => Some(NAMESPACE),
        ("v1", "ConfigMap") => Some(CONFIG_MAP),
        ("v1", "Secret") => Some(SECRET),
        ("v1", "ServiceAccount") => Some(SERVICE_ACCOUNT),
        ("apps/v1", "Deployment") => Some(DEPLOYMENT),
        _ => None,
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

fn malformed() -> ApiError {
    ApiError::bad_request(
        "the protobuf request body is malformed; send JSON (kubectl apply -f) instead",
    )
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, ApiError> {
        let mut out = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.buf.get(self.pos).ok_or_else(malformed)?;
            self.pos += 1;
            out |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(out);
            }
        }
        Err(malformed())
    }

    fn bytes(&mut self) -> Result<&'a [u8], ApiError> {
        let len = usize::try_from(self.varint()?).map_err(|_| malformed())?;
        let end = self
            .pos
            .checked_add(len)
            .filter(|e| *e <= self.buf.len())
            .ok_or_else(malformed)?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn skip(&mut self, wire: u64) -> Result<(), ApiError> {
        match wire {
            0 => self.varint().map(drop),
            1 => self.advance(8),
            2 => self.bytes().map(drop),
            5 => self.advance(4),
            _ => Err(malformed()),
        }
    }

    fn advance(&mut self, n: usize) -> Result<(), ApiError> {
        self.pos = self
            .pos
            .checked_add(n)
            .filter(|p| *p <= self.buf.len())
            .ok_or_else(malformed)?;
        Ok(())
    }
}

fn text(b: &[u8]) -> Result<Value, ApiError> {
    std::str::from_utf8(b)
        .map(|s| json!(s))
        .map_err(|_| malformed())
}

fn map_entry(b: &[u8], bytes_value: bool) -> Result<(String, Value), ApiError> {
    let mut r = Reader { buf: b, pos: 0 };
    let (mut key, mut value) = (String::new(), json!(""));
    while r.pos < r.buf.len() {
        let tag = r.varint()?;
        match (tag >> 3, tag & 7) {
            (1, 2) => {
                key = std::str::from_utf8(r.bytes()?)
                    .map_err(|_| malformed())?
                    .to_string()
            }
            (2, 2) => {
                let v = r.bytes()?;
                value = if bytes_value {
                    json!(base64::engine::general_purpose::STANDARD.encode(v))
                } else {
                    text(v)?
                };
            }
            (_, w) => r.skip(w)?,
        }
    }
    Ok((key, value))
}

fn decode_message(buf: &[u8], schema: &[Field]) -> Result<Value, ApiError> {
    let mut r = Reader { buf, pos: 0 };
    let mut out = Map::new();
    while r.pos < r.buf.len() {
        let tag = r.varint()?;
        let (num, wire) = (tag >> 3, tag & 7);
        let Some((_, name, ty)) = schema.iter().find(|(n, _, _)| *n == num) else {
            r.skip(wire)?;
            continue;
        };
        let key = (*name).to_string();
        match (*ty, wire) {
            (Ty::Str, 2) => {
                out.insert(key, text(r.bytes()?)?);
            }
            (Ty::Bytes, 2) => {
                out.insert(
                    key,
                    json!(base64::engine::general_purpose::STANDARD.encode(r.bytes()?)),
                );
            }
            (Ty::Bool, 0) => {
                out.insert(key, json!(r.varint()? != 0));
            }
            (Ty::Int, 0) => {
                // int32/int64 fields: negative values are ten-byte two's complement.
                out.insert(key, json!(r.varint()? as i64));
            }
            (Ty::Msg(s), 2) => {
                out.insert(key, decode_message(r.bytes()?, s)?);
            }
            (Ty::MapStr | Ty::MapBytes, 2) => {
                let (k, v) = map_entry(r.bytes()?, matches!(ty, Ty::MapBytes))?;
                if let Some(m) = out.entry(key).or_insert_with(|| json!({})).as_object_mut() {
                    m.insert(k, v);
                }
            }
            (Ty::RepStr, 2) => {
                let v = text(r.bytes()?)?;
                if let Some(a) = out.entry(key).or_insert_with(|| json!([])).as_array_mut() {
                    a.push(v);
                }
            }
            (Ty::RepMsg(s), 2) => {
                let v = decode_message(r.bytes()?, s)?;
                if let Some(a) = out.entry(key).or_insert_with(|| json!([])).as_array_mut() {
                    a.push(v);
                }
            }
            (_, w) => r.skip(w)?,
        }
    }
    Ok(Value::Object(out))
}

/// Decodes a protobuf-encoded object into JSON.
pub fn decode(body: &[u8]) -> Result<Value, ApiError> {
    let inner = body.strip_prefix(MAGIC).ok_or_else(malformed)?;
    let unknown = decode_message(inner, UNKNOWN)?;
    let api_version = unknown["typeMeta"]["apiVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let kind = unknown["typeMeta"]["kind"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let schema = schema_for(&api_version, &kind).ok_or_else(|| {
        ApiError::unsupported_media_type(&format!(
            "{CONTENT_TYPE} for {api_version} {kind} (the sandbox decodes protobuf only for Namespace, ConfigMap, Secret, ServiceAccount and Deployment; send JSON, e.g. kubectl apply -f)"
        ))
    })?;
    let raw = unknown["raw"].as_str().unwrap_or_default();
    let raw = base64::engine::general_purpose::STANDARD
        .decode(raw)
        .map_err(|_| malformed())?;
    let mut obj = decode_message(&raw, schema)?;
    obj["apiVersion"] = json!(api_version);
    obj["kind"] = json!(kind);
    Ok(obj)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(num: u64, payload: &[u8]) -> Vec<u8> {
        let mut v = vec![(num << 3 | 2) as u8, payload.len() as u8];
        v.extend_from_slice(payload);
        v
    }

    #[test]
    fn decodes_a_configmap_like_kubectl_sends_it() {
        let meta = field(1, b"demo");
        let entry = [field(1, b"color"), field(2, b"blue")].concat();
        let raw = [field(1, &meta), field(2, &entry)].concat();
        let type_meta = [field(1, b"v1"), field(2, b"ConfigMap")].concat();
        let body = [MAGIC.to_vec(), field(1, &type_meta), field(2, &raw)].concat();
        let obj = decode(&body).unwrap();
        assert_eq!(obj["metadata"]["name"], "demo");
        assert_eq!(obj["data"]["color"], "blue");
        assert_eq!(obj["kind"], "ConfigMap");
    }

    #[test]
    fn unknown_kinds_and_garbage_are_refused() {
        let type_meta = [field(1, b"batch/v1"), field(2, b"Job")].concat();
        let body = [MAGIC.to_vec(), field(1, &type_meta)].concat();
        assert_eq!(decode(&body).unwrap_err().code, 415);
        assert_eq!(decode(b"k8s\0\xff").unwrap_err().code, 400);
        assert_eq!(decode(b"{}").unwrap_err().code, 400);
    }
}
