#!/usr/bin/env bash
# `make run`: start `kudo-manager dev` (its own API server, controller and
# webhook in one process), install operators/first-operator, follow its
# deploy plan to COMPLETE, show the webhook refusing a bad value, and keep
# the manager running until Ctrl-C. `source target/kudo-dev/env` in another
# terminal points kubectl (and `kubectl kudo`) at it.
#
# An exported KUBECONFIG is left alone: the dev server is always used. To
# run the manager against a cluster instead, name its kubeconfig in
# KUDO_RUN_KUBECONFIG (install the CRDs there first: `kubectl kudo init
# --crd-only`).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
bin=$target/debug
manager=$bin/kudo-manager
kudo=$bin/kubectl-kudo
timeout_s=${KUDO_RUN_TIMEOUT:-120}
workdir=${KUDO_DEV_DIR:-$root/target/kudo-dev}

for binary in "$manager" "$kudo"; do
  if [[ ! -x $binary ]]; then
    echo "run.sh: $binary is missing; run \`make run\` (it builds the binaries first)" >&2
    exit 1
  fi
done

mkdir -p "$workdir"
log=$workdir/manager.log
envfile=$workdir/env
kubeconfig=$workdir/kubeconfig
rm -f "$envfile"

if [[ -n ${KUDO_RUN_KUBECONFIG:-} ]]; then
  kubeconfig=$KUDO_RUN_KUBECONFIG
  webhook=(--no-webhook)
  if [[ ${KUDO_RUN_LOCAL_WEBHOOK:-} == 1 ]]; then
    webhook=(--local-webhook)
  fi
  echo "running kudo-manager against the cluster of $kubeconfig (KUDO_RUN_KUBECONFIG)"
  if [[ ${webhook[0]} == --no-webhook ]]; then
    echo "without the admission webhook: a webhook served on this machine is reachable only by an"
    echo "API server on this machine; KUDO_RUN_LOCAL_WEBHOOK=1 registers one (--local-webhook)"
  fi
  "$manager" run --kubeconfig "$kubeconfig" --admin-addr 127.0.0.1:0 --no-leader-election \
    "${webhook[@]}" >"$log" 2>&1 &
  ready_line='caches synced'
else
  if [[ -n ${KUBECONFIG:-} ]]; then
    echo "KUBECONFIG is set ($KUBECONFIG); make run leaves it alone and starts its own API server."
    echo "To run the manager against that cluster instead: KUDO_RUN_KUBECONFIG=\$KUBECONFIG make run"
  fi
  "$manager" dev --kubeconfig-out "$kubeconfig" >"$log" 2>&1 &
  ready_line='^ready'
fi
pid=$!
cleanup() {
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -f "$envfile"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "starting kudo-manager (log: $log)"
for ((i = 0; i < timeout_s * 10; i++)); do
  if grep -q "$ready_line" "$log" 2>/dev/null; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "kudo-manager exited:" >&2
    cat "$log" >&2
    exit 1
  fi
  sleep 0.1
done
if ! grep -q "$ready_line" "$log"; then
  echo "kudo-manager did not become ready within ${timeout_s}s:" >&2
  tail -20 "$log" >&2
  exit 1
fi

# What another terminal needs: `source target/kudo-dev/env` (from the root).
cat >"$envfile" <<ENV
export KUBECONFIG=$kubeconfig
export PATH=$bin:\$PATH
ENV
export KUBECONFIG=$kubeconfig PATH=$bin:$PATH

cd "$root"
echo
echo "+ kubectl kudo install operators/first-operator --instance first-operator --wait"
if ! kubectl-kudo install operators/first-operator --instance first-operator --wait \
  --wait-timeout "${timeout_s}s"; then
  echo "the deploy plan did not complete; manager log: $log" >&2
  tail -20 "$log" >&2
  exit 1
fi
echo "+ kubectl kudo plan status --instance first-operator"
kubectl-kudo plan status --instance first-operator

# The admission webhook at work: a bad value is refused when it is written.
if [[ -z ${KUDO_RUN_KUBECONFIG:-} ]] && command -v kubectl >/dev/null; then
  echo
  echo "+ kubectl patch instance first-operator --type merge -p '{\"spec\":{\"parameters\":{\"REPLICAS\":\"many\"}}}'"
  kubectl patch instances.kudo.dev first-operator --type merge \
    -p '{"spec":{"parameters":{"REPLICAS":"many"}}}' 2>&1 || true
fi

cat <<MSG

first-operator is deployed. The manager keeps running until Ctrl-C (log: $log).
In another terminal, from $root:
  source ${envfile#"$root"/}
  kubectl kudo plan status --instance first-operator
  kubectl kudo update --instance first-operator -p REPLICAS=3 --wait
The README's quickstart goes on from there.
MSG
wait "$pid"
