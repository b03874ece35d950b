#!/usr/bin/env bash
# `make run`: start kudo-manager in dev mode (embedded sandbox + controller +
# webhook), install operators/first-operator and show its deploy plan.
# With KUBECONFIG set, the manager runs against that cluster instead.
set -euo pipefail
cat <<'MSG'
kudo-rs `make run`

The manager is being built issue by issue. When it lands, this target will:
  1. start `kudo-manager dev` (embedded API server, controller and webhook),
     or `kudo-manager run` against $KUBECONFIG when it is set;
  2. install operators/first-operator with `kubectl kudo install`;
  3. print the plan status tree until the deploy plan is COMPLETE;
  4. leave the manager running and print commands to try next.

Today the workspace builds and `make test` runs the API, CRD and unit tests.
MSG
