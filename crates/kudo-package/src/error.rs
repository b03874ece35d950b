//! Errors of this crate: loading a package, building parameter values and
//! rendering a task. Every message names the file, template, task or
//! parameter at fault.

/// Loading a package failed: the files could not be read or parsed.
#[derive(Debug, thiserror::Error)]
pub enum PackageError {
    /// Reading a file or directory failed.
    #[error("{path}: {source}")]
    Io {
        /// The path that could not be read.
        path: String,
        /// The underlying IO error.
        #[source]
        source: std::io::Error,
    },
    /// The archive is not a valid gzip-compressed tar file.
    #[error("{path}: not a valid .tgz package: {detail}")]
    Archive {
        /// Archive path.
        path: String,
        /// What went wrong.
        detail: String,
    },
    /// `operator.yaml` or `params.yaml` is missing.
    #[error(
        "{source_name}: {file} is missing; a package needs operator.yaml and params.yaml at its root"
    )]
    MissingFile {
        /// Package shown in messages.
        source_name: String,
        /// The missing file.
        file: String,
    },
    /// A package file is not valid YAML of the expected shape.
    #[error("{source_name}/{file}: {detail}")]
    Parse {
        /// Package shown in messages.
        source_name: String,
        /// The file (relative to the package root).
        file: String,
        /// Parser message.
        detail: String,
    },
    /// A file of a package folder is a symbolic link to a place outside it.
    #[error(
        "{file}: a symbolic link to {target}, outside the package folder {root}; a package \
         reads only its own files, so copy the file into the package"
    )]
    LinkOutside {
        /// The link, as found in the folder.
        file: String,
        /// Where it leads (canonical).
        target: String,
        /// The package folder (canonical).
        root: String,
    },
    /// A template file is not UTF-8.
    #[error("{source_name}/{file}: template is not valid UTF-8")]
    NotUtf8 {
        /// Package shown in messages.
        source_name: String,
        /// The file.
        file: String,
    },
    /// The package has verification errors and is refused.
    #[error("{source_name}: package is invalid:\n{report}")]
    Invalid {
        /// Package shown in messages.
        source_name: String,
        /// The verification report (errors and warnings).
        report: crate::verify::Report,
    },
    /// A KudoOperator task's `package` is a path with no package behind it.
    #[error("dependency {reference}: {place}")]
    DependencyNotFound {
        /// The task's `package`.
        reference: String,
        /// Where it was looked for.
        place: String,
    },
    /// A KudoOperator task's dependency cannot be resolved.
    #[error("{source_name}: task {task} (KudoOperator): {detail}")]
    Dependency {
        /// The package holding the task.
        source_name: String,
        /// Task name.
        task: String,
        /// What is wrong and what to do.
        detail: String,
    },
    /// Packages depend on each other in a circle.
    #[error("cyclic package dependency: {chain}")]
    DependencyCycle {
        /// The OperatorVersions around the circle, `a-0.1.0 -> b-0.1.0 -> a-0.1.0`.
        chain: String,
    },
    /// The OperatorVersion is bigger than an API server stores.
    #[error(
        "OperatorVersion {name} would be {size} bytes, {} bytes over the {limit}-byte limit of \
         what an API server stores (etcd refuses bigger objects); largest templates: {largest}",
        size - limit
    )]
    TooLarge {
        /// `namespace/name` of the OperatorVersion.
        name: String,
        /// Its size as JSON.
        size: usize,
        /// The limit ([`crate::render::MAX_OBJECT_BYTES`]).
        limit: usize,
        /// The biggest templates with their sizes.
        largest: String,
    },
}

/// A parameter value cannot be turned into what templates see.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParamsError {
    /// Values were given for parameters the OperatorVersion does not
    /// declare (the message lists at most
    /// [`kudo_api::message::MAX_LISTED`] of each list).
    #[error(
        "{} not declared by the operator; declared parameters are: {}",
        unknown_names(names),
        kudo_api::message::listed(declared)
    )]
    Unknown {
        /// The undeclared names.
        names: Vec<String>,
        /// The declared names.
        declared: Vec<String>,
    },
    /// A value does not fit its definition (type, enum, required).
    #[error(transparent)]
    Invalid(#[from] kudo_api::ParameterValueError),
    /// A map or array value is not valid YAML of that shape.
    #[error("parameter {name} of type {kind} cannot be parsed: {detail}")]
    Unparsable {
        /// Parameter name.
        name: String,
        /// Declared type.
        kind: kudo_api::ParameterType,
        /// Parser message.
        detail: String,
    },
}

/// Rendering a task failed. In KUDO every such error is FATAL: retrying the
/// same templates with the same values gives the same failure.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RenderError {
    /// No task of this name in the OperatorVersion.
    #[error("task {task} is not defined in the operator version")]
    UnknownTask {
        /// Task name.
        task: String,
    },
    /// The task is malformed (kind, missing fields).
    #[error("task {task}: {detail}")]
    InvalidTask {
        /// Task name.
        task: String,
        /// What is wrong and what to write instead.
        detail: String,
    },
    /// A task names a template the OperatorVersion does not have.
    #[error("task {task}: template {template} does not exist in the operator version")]
    MissingTemplate {
        /// Task name.
        task: String,
        /// Template name.
        template: String,
    },
    /// The template engine refused a template (parse or execution).
    #[error("task {task}: error rendering template: {detail}")]
    Template {
        /// Task name.
        task: String,
        /// `template:line:col: message` from the engine.
        detail: String,
    },
    /// The rendered text is not valid YAML or not a Kubernetes object.
    #[error("task {task}: template {template} did not render valid Kubernetes YAML: {detail}")]
    Yaml {
        /// Task name.
        task: String,
        /// Template name.
        template: String,
        /// Parser message.
        detail: String,
    },
    /// Discovery does not know whether the kind is namespaced.
    #[error(
        "task {task}: {kind} {name} ({api_version}) is of a kind the API server does not know; \
         create its CustomResourceDefinition in an earlier step"
    )]
    UnknownKind {
        /// Task name.
        task: String,
        /// apiVersion of the object.
        api_version: String,
        /// Kind of the object.
        kind: String,
        /// Object name.
        name: String,
    },
    /// A namespaced object names a namespace other than the Instance's:
    /// an Instance writes only into its own namespace.
    #[error(
        "task {task}: {kind} {name} names namespace {namespace:?}, but the Instance is in \
         {instance_namespace:?}; an Instance's namespaced objects live in its own namespace \
         (drop metadata.namespace or use {{{{ .Namespace }}}})"
    )]
    ForeignNamespace {
        /// Task name.
        task: String,
        /// Kind of the object.
        kind: String,
        /// Object name.
        name: String,
        /// The namespace the template asked for.
        namespace: String,
        /// The Instance's namespace.
        instance_namespace: String,
    },
    /// A task template renders a Namespace: namespaces are made only by
    /// `kubectl kudo install --create-namespace`, never by a plan (a
    /// template that can render one for some parameter values would let
    /// whoever sets them create or delete namespaces with the Instance's
    /// account).
    #[error(
        "task {task}: template {template} renders Namespace {name}; a plan does not create or \
         delete namespaces (`kubectl kudo install --create-namespace` makes the Instance's, from \
         the package's namespaceManifest)"
    )]
    NamespaceInTemplate {
        /// Task name.
        task: String,
        /// Template name.
        template: String,
        /// The Namespace's name.
        name: String,
    },
    /// The `namespaceManifest` template does not render one Namespace.
    #[error("namespace manifest {template}: {detail}")]
    NamespaceManifest {
        /// Template name.
        template: String,
        /// What went wrong.
        detail: String,
    },
    /// A Toggle task's parameter is missing or not a boolean.
    #[error("task {task}: toggle parameter {parameter}: {detail}")]
    Toggle {
        /// Task name.
        task: String,
        /// Parameter name.
        parameter: String,
        /// What is wrong.
        detail: String,
    },
    /// A Pipe task's pod or file list breaks the pipe rules.
    #[error("task {task}: pipe: {detail}")]
    Pipe {
        /// Task name.
        task: String,
        /// What is wrong.
        detail: String,
    },
    /// Parameter values could not be built.
    #[error("task {task}: {source}")]
    Params {
        /// Task name.
        task: String,
        /// The parameter problem.
        #[source]
        source: ParamsError,
    },
    /// The plan does not exist in the OperatorVersion.
    #[error("plan {plan} is not defined in the operator version; plans are: {available}")]
    UnknownPlan {
        /// Plan name.
        plan: String,
        /// Comma-separated plan names.
        available: String,
    },
    /// User parameter values are invalid.
    #[error("invalid parameters:\n{0}")]
    InvalidParameters(crate::params::ParamsErrors),
    /// A template rendered more than its budget allows (output or values
    /// built by functions), see [`crate::render::RenderLimits`].
    #[error("task {task}: {detail}")]
    Budget {
        /// Task name.
        task: String,
        /// The engine's error (template, line, function) and the budget.
        detail: String,
    },
    /// A parameter value would add YAML structure (a document, keys) or set
    /// an object's apiVersion, kind or namespace: objects come from
    /// templates, not from values.
    #[error("task {task}: {detail}")]
    Injection {
        /// Task name.
        task: String,
        /// Which parameter, what it does, where, and what to do instead.
        detail: String,
    },
    /// A task renders more objects than a task may apply.
    #[error(
        "task {task}: its templates render more than {limit} objects (template {template} \
         passed the limit); split the task or make the loop smaller"
    )]
    TooManyObjects {
        /// Task name.
        task: String,
        /// The template that passed the limit.
        template: String,
        /// [`crate::render::MAX_TASK_OBJECTS`].
        limit: usize,
    },
    /// A rendered object is bigger than an API server stores.
    #[error(
        "task {task}: {object} is {size} bytes, over the {limit}-byte limit of what an API \
         server stores (etcd refuses bigger objects); make it smaller or split it"
    )]
    ObjectTooLarge {
        /// Task name.
        task: String,
        /// `Kind namespace/name` of the object.
        object: String,
        /// Its size as JSON.
        size: usize,
        /// The limit ([`crate::render::MAX_OBJECT_BYTES`]).
        limit: usize,
    },
    /// The dependencies hash could not be computed (bad live object).
    #[error("dependencies hash of {object}: {detail}")]
    Hash {
        /// `kind/name` of the object.
        object: String,
        /// What went wrong.
        detail: String,
    },
}

impl RenderError {
    /// Whether the error is FATAL (retrying cannot help). Every render error
    /// is, as in KUDO, except a dependencies-hash failure, which depends on
    /// live objects and is transient. Budget and size errors are FATAL: the
    /// same templates and parameters render the same size again.
    pub fn is_fatal(&self) -> bool {
        !matches!(self, Self::Hash { .. })
    }
}

/// "parameter A is" or "parameters A, B and 3 more are".
fn unknown_names(names: &[String]) -> String {
    match names {
        [one] => format!("parameter {} is", kudo_api::message::listed(&[one])),
        many => format!("parameters {} are", kudo_api::message::listed(many)),
    }
}
