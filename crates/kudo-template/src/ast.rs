//! Parse tree. Every node keeps its byte span so errors can name the
//! failing action and its line/column.

/// Byte range of a node in the template source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

/// A sequence of nodes.
pub type List = Vec<Node>;

/// A template node.
#[derive(Debug, Clone)]
pub enum Node {
    /// Literal text and where it is.
    Text(String, Span),
    /// `{{ pipeline }}`
    Action(Pipe),
    /// `{{ if }}` / `{{ with }}`.
    Branch {
        kind: BranchKind,
        pipe: Pipe,
        then: List,
        otherwise: Option<List>,
    },
    /// `{{ template "name" pipeline }}`
    Template {
        span: Span,
        name: String,
        pipe: Option<Pipe>,
    },
    /// `{{ break }}`
    Break,
    /// `{{ continue }}`
    Continue,
}

/// Kind of a branching node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BranchKind {
    If,
    With,
    Range,
}

/// A pipeline, possibly declaring or assigning variables.
#[derive(Debug, Clone)]
pub struct Pipe {
    pub span: Span,
    pub vars: Vec<String>,
    pub assign: bool,
    pub cmds: Vec<Cmd>,
}

/// One command of a pipeline: a function call or a single operand.
#[derive(Debug, Clone)]
pub struct Cmd {
    pub span: Span,
    pub args: Vec<Arg>,
}

/// An operand.
#[derive(Debug, Clone)]
pub enum Arg {
    /// `.` (dot).
    Dot(Span),
    /// `nil`
    Nil(Span),
    /// `true`/`false`
    Bool(bool, Span),
    /// Integer constant.
    Int(i64, Span),
    /// Float constant.
    Float(f64, Span),
    /// String constant.
    Str(String, Span),
    /// Function name, resolved at parse time.
    Func(String, &'static crate::funcs::FuncDef, Span),
    /// `.a.b` on dot.
    Field(Vec<String>, Span),
    /// `$x.a.b`.
    Var(String, Vec<String>, Span),
    /// `(pipe).a.b` (fields may be empty).
    Sub(Box<Pipe>, Vec<String>, Span),
}

impl Arg {
    /// Source span of the operand.
    pub fn span(&self) -> Span {
        match self {
            Arg::Dot(s)
            | Arg::Nil(s)
            | Arg::Bool(_, s)
            | Arg::Int(_, s)
            | Arg::Float(_, s)
            | Arg::Str(_, s)
            | Arg::Func(_, _, s)
            | Arg::Field(_, s)
            | Arg::Var(_, _, s)
            | Arg::Sub(_, _, s) => *s,
        }
    }
}
