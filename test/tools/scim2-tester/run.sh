#!/usr/bin/env bash
# SCIM 2.0 compliance checker: python-scim's scim2-tester 0.2.8 with scim2-client and
# scim2-models, vendored here (Apache-2.0, licences beside the packages). Local patches, each
# marked "Local patch" in the code, and why in docs/decisions.md (SCIM 2.0):
# - scim2_models: ServiceProviderConfig accepts RFC 9865's "pagination", which this release predates;
# - scim2_tester/utils.py: a readOnly sub-attribute the client did not send (a Group member's
#   "display") is not compared with what the server filled in (RFC 7643 §2.2);
# - scim2_tester/checkers/patch_remove.py: an empty list counts as unassigned (RFC 7643 §2.5).
# The Python packages it needs (pydantic, httpx, email-validator) are installed with pip into a
# virtual environment ($SCIM2_TESTER_VENV, else $TMPDIR/scim2-tester-venv) on first use.
# Usage: run.sh BASE_URL API_KEY   (BASE_URL like http://127.0.0.1:8080/scim/v2/<client_id>)
# Prints one line per check (SUCCESS / COMPLIANT / ACCEPTABLE / DEVIATION / ERROR / CRITICAL …),
# then 'scim2-tester: N checks, E errors'; exits 1 when there is no check or any ERROR/CRITICAL.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: run.sh BASE_URL API_KEY" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
venv="${SCIM2_TESTER_VENV:-${TMPDIR:-/tmp}/scim2-tester-venv}"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import pydantic, httpx, email_validator' 2>/dev/null; then
  python3 -m venv "$venv" >/dev/null
  "$venv/bin/pip" install -q --retries 0 --timeout 5 pydantic httpx email-validator >/dev/null 2>&1
fi
base=$1; key=$2; shift 2
out=$(PYTHONPATH="$here" PYTHONDONTWRITEBYTECODE=1 "$venv/bin/python" -c 'import sys; from scim2_tester.cli import cli; sys.exit(cli())' "$base" --token "$key" "$@" 2>&1) || true
echo "$out"
total=$(echo "$out" | grep -cE '^(SUCCESS|COMPLIANT|ACCEPTABLE|DEVIATION|ERROR|CRITICAL|SKIPPED) ' || true)
errors=$(echo "$out" | grep -cE '^(ERROR|CRITICAL) ' || true)
echo "scim2-tester: $total checks, $errors errors"
[ "$total" -gt 0 ] && [ "$errors" -eq 0 ]
