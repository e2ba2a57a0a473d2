#!/usr/bin/env bash
# The shop/ledger transaction with the `verdict` command only:
#
#   bash examples/shop-ledger/cli.sh
#
# Starts two PostgreSQL participants (`verdict participant --resource
# postgres`), commits an order the ledger can pay (COMMITTED, exit 0) and one
# it cannot (ABORTED: the ledger votes NO, exit 2), then stops them. Settings
# as in setup.mjs, plus SHOP_LISTEN and LEDGER_LISTEN (default 127.0.0.1:7121
# and :7122) where the participants serve.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
verdict=(node "$here/../../bin/verdict.mjs")
endpoints="${VERDICT_ENDPOINTS:-127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003}"
cluster="${VERDICT_CLUSTER_ID:-local}"
data="${EXAMPLE_DATA:-data/examples/shop-ledger}"

node "$here/setup.mjs"

pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait "${pids[@]}" 2>/dev/null || true' EXIT
"${verdict[@]}" participant --id shop-cli --listen "${SHOP_LISTEN:-127.0.0.1:7121}" --data "$data/shop-cli" --cluster-id "$cluster" \
  --endpoints "$endpoints" --resource postgres --pg-url "${SHOP_URL:-postgres://postgres@127.0.0.1:5432/shop}" --log-level warn &
pids+=($!)
"${verdict[@]}" participant --id ledger-cli --listen "${LEDGER_LISTEN:-127.0.0.1:7122}" --data "$data/ledger-cli" --cluster-id "$cluster" \
  --endpoints "$endpoints" --resource postgres --pg-url "${LEDGER_URL:-postgres://postgres@127.0.0.1:5432/ledger}" --log-level warn &
pids+=($!)

# Both registered (bounded wait).
for _ in $(seq 60); do
  listed="$("${verdict[@]}" participants --json --endpoints "$endpoints" 2>/dev/null || true)"
  if grep -q '"shop-cli"' <<<"$listed" && grep -q '"ledger-cli"' <<<"$listed"; then break; fi
  sleep 1
done

order="o-$(date +%s%N)"
"${verdict[@]}" txn commit --endpoints "$endpoints" \
  --participant "shop-cli={\"sql\":[\"INSERT INTO orders (id, sku, qty) VALUES ('$order', 'sku-1', 1)\"]}" \
  --participant 'ledger-cli={"sql":["UPDATE accounts SET balance_cents = balance_cents - 250 WHERE id = '"'"'acct-9'"'"'"]}'

set +e
"${verdict[@]}" txn commit --endpoints "$endpoints" \
  --participant "shop-cli={\"sql\":[\"INSERT INTO orders (id, sku, qty) VALUES ('$order-2', 'sku-1', 1)\"]}" \
  --participant 'ledger-cli={"sql":["UPDATE accounts SET balance_cents = balance_cents - 1000000000 WHERE id = '"'"'acct-9'"'"'"]}'
code=$?
set -e
if [ "$code" -ne 2 ]; then echo "expected ABORTED (exit 2), got exit $code" >&2; exit 1; fi
echo "order $order COMMITTED; order $order-2 ABORTED, as expected"
