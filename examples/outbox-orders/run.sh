#!/usr/bin/env bash
# Starts `verdict outbox relay` in the background, runs orders.mjs, stops the
# relay with SIGTERM. Needs a running cluster (npm start), a PostgreSQL with
# the databases `shop` and `stock`, and `nats-server -js` (see README.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
SHOP_URL=${SHOP_URL:-postgres://postgres@127.0.0.1:5432/shop}
NATS_URL=${NATS_URL:-nats://127.0.0.1:4222}
node bin/verdict.mjs outbox init --pg-url "$SHOP_URL"
node bin/verdict.mjs outbox relay --pg-url "$SHOP_URL" --sink "$NATS_URL" \
  --stream "${OUTBOX_STREAM:-ORDERS}" --subject "${OUTBOX_SUBJECT:-orders.events}" \
  --endpoints "${VERDICT_ENDPOINTS:-127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003}" --log-level warn &
relay=$!
trap 'kill -TERM $relay 2>/dev/null; wait $relay' EXIT
SHOP_URL="$SHOP_URL" NATS_URL="$NATS_URL" node examples/outbox-orders/orders.mjs
