#!/usr/bin/env bash
# `make run`: start kudo-manager in dev mode (embedded sandbox API server +
# controller + webhook), install operators/first-operator and show its
# deploy plan until COMPLETE; then keep the manager running.
# With KUDO_RUN_KUBECONFIG or KUBECONFIG set, run the manager against that
# cluster instead (`kudo-manager run`).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
manager=$target/debug/kudo-manager
kudo=$target/debug/kubectl-kudo
timeout_s=${KUDO_RUN_TIMEOUT:-120}

if [[ ! -x $manager ]]; then
  echo "run.sh: $manager is missing; run \`make run\` (it builds the binaries first)" >&2
  exit 1
fi

if [[ -n ${KUBECONFIG:-} ]]; then
  echo "KUBECONFIG is set: running kudo-manager against that cluster (Ctrl-C to stop)."
  echo "The webhook is not served from outside the cluster; deploy/ installs it in-cluster."
  exec "$manager" run --no-webhook --admin-addr 127.0.0.1:8080 \
    --leader-election-namespace "${KUDO_NAMESPACE:-default}"
fi

workdir=${KUDO_DEV_DIR:-$root/target/kudo-dev}
mkdir -p "$workdir"
kubeconfig=$workdir/kubeconfig
log=$workdir/manager.log
rm -f "$kubeconfig"

have_cli=false
if [[ -x $kudo ]] && "$kudo" install --help >/dev/null 2>&1; then
  have_cli=true
fi

install_flags=()
if ! $have_cli; then
  install_flags=(--install-package "$root/operators/first-operator")
fi

"$manager" dev --kubeconfig-out "$kubeconfig" --admin-addr 127.0.0.1:0 "${install_flags[@]}" >"$log" 2>&1 &
pid=$!
cleanup() { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "starting kudo-manager dev (log: $log)"
for ((i = 0; i < timeout_s * 10; i++)); do
  if grep -q '^ready' "$log" 2>/dev/null; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "kudo-manager dev exited early:" >&2; cat "$log" >&2; exit 1
  fi
  sleep 0.1
done
if ! grep -q '^ready' "$log"; then
  echo "kudo-manager dev did not become ready within ${timeout_s}s:" >&2; tail -20 "$log" >&2; exit 1
fi
export KUBECONFIG=$kubeconfig

if $have_cli; then
  echo "+ kubectl kudo install operators/first-operator"
  "$kudo" install "$root/operators/first-operator" --instance first-operator
fi

echo
echo "deploy plan of Instance first-operator:"
last=""
result=""
for ((i = 0; i < timeout_s * 2; i++)); do
  if [[ -x $kudo ]] && "$kudo" plan status --help >/dev/null 2>&1; then
    out=$("$kudo" plan status --instance first-operator 2>&1 || true)
    result=$(grep -oE 'Plan deploy .*\[(COMPLETE|FATAL_ERROR)\]' <<<"$out" | grep -oE 'COMPLETE|FATAL_ERROR' || true)
  elif command -v kubectl >/dev/null; then
    out=$(kubectl get instances.kudo.dev first-operator -o jsonpath='{range .status.planStatus.deploy.phases[*]}phase {.name}: {.status}{"\n"}{range .steps[*]}  step {.name}: {.status} {.message}{"\n"}{end}{end}' 2>&1 || true)
    result=$(kubectl get instances.kudo.dev first-operator -o jsonpath='{.status.planStatus.deploy.status}' 2>/dev/null | grep -oE 'COMPLETE|FATAL_ERROR' || true)
  else
    echo "neither kubectl-kudo nor kubectl is available to show the plan" >&2
    break
  fi
  if [[ $out != "$last" ]]; then
    printf '%s\n\n' "$out"
    last=$out
  fi
  [[ -n $result ]] && break
  sleep 0.5
done
if [[ $result != COMPLETE ]]; then
  echo "the deploy plan did not complete (${result:-timed out after ${timeout_s}s}); manager log: $log" >&2
  tail -20 "$log" >&2
  exit 1
fi

# Show the admission webhook at work: an invalid parameter is refused at write time.
if command -v kubectl >/dev/null; then
  echo "+ kubectl patch instance first-operator --type merge -p '{\"spec\":{\"parameters\":{\"REPLICAS\":\"many\"}}}'"
  kubectl patch instances.kudo.dev first-operator --type merge \
    -p '{"spec":{"parameters":{"REPLICAS":"many"}}}' 2>&1 || true
fi

cat <<MSG

first-operator is deployed. The manager keeps running (Ctrl-C stops it).
Try, in another terminal:
  export KUBECONFIG=$kubeconfig
  kubectl get instances,deployments
  $kudo plan status --instance first-operator
  $kudo update --instance first-operator -p REPLICAS=3
  kubectl delete instance first-operator
Manager log: $log
MSG
wait "$pid"
