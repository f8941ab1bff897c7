#!/usr/bin/env bash
# The federated demo in one script, split trust: an aggregator (`tally serve`) and a relay
# (`tally relay`) as two processes with two databases, each over TLS with its own self-signed
# certificate (the script makes them), a TrieHH++ task on Shakespeare, a fleet of 835,229
# simulated devices that seal every report to the aggregator's key and upload it to the relay,
# the release and the ledger, then the simulator on the same data with the same parameters for
# comparison.
#
#   bash tools/demo/federated.sh [PORT]    (the aggregator on PORT, the relay on PORT + 1)
set -euo pipefail
cd "$(dirname "$0")/../.."
port="${1:-8080}"
relay_port="$((port + 1))"
aggregator="https://127.0.0.1:$port"
relay="https://127.0.0.1:$relay_port"
cargo build --release --quiet -p tally-cli --features federated
tally=target/release/tally
work="$(mktemp -d)"
trap 'kill "${relay_pid:-}" "${serve_pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
db="sqlite://$work/tally.db"
relay_db="sqlite://$work/relay.db"

# The aggregator's operator, before its server runs: the population, whose devices' reports go
# through a relay (--trust split), with its budget; an analyst; and the relay's credential at
# the aggregator, handed to the relay's operator (each token is printed once; the database
# keeps only its hash).
"$tally" population create --db "$db" shakespeare --budget-epsilon 10 --budget-delta 1e-5 \
    --min-cohort 100 --trust split
analyst="$("$tally" token create --db "$db" --role analyst --population shakespeare --name analyst)"
relay_token="$("$tally" token create --db "$db" --role relay --population shakespeare \
    --name "the relay's organisation")"

# The relay's operator, another organisation, in its own database: its operator credential,
# with which the simulated fleet checks its devices in (real devices are enrolled one
# credential each: `tally device enroll --db RELAY_DB --relay --population shakespeare --count
# N --out FILE`, then `tally fleet|client --credentials FILE`).
devices="$("$tally" token create --db "$relay_db" --role operator --name "relay operator")"

# A self-signed certificate for each party, for 127.0.0.1.
"$tally" cert --cert "$work/aggregator.pem" --key "$work/aggregator.key"
"$tally" cert --cert "$work/relay.pem" --key "$work/relay.key"

# Terminal 1: the aggregator over TLS, with its SQLite database in a scratch directory.
"$tally" serve --listen "127.0.0.1:$port" --db "$db" --tls-cert "$work/aggregator.pem" \
    --tls-key "$work/aggregator.key" 2>"$work/serve.log" &
serve_pid=$!
until "$tally" ledger --server "$aggregator" --ca-cert "$work/aggregator.pem" \
    --token "$analyst" >/dev/null 2>&1; do sleep 0.1; done

# Terminal 2: the relay over TLS, following the aggregator's rounds with its relay credential
# (it trusts the aggregator's certificate), counting every device the fleet relays, and
# forwarding a round as soon as every device of the population uploaded (--cohort-pool 1; by
# default it holds twice the cohort target, or waits for the deadline).
TALLY_AGGREGATOR_TOKEN="$relay_token" "$tally" relay --listen "127.0.0.1:$relay_port" \
    --db "$relay_db" --tls-cert "$work/relay.pem" --tls-key "$work/relay.key" \
    --aggregator "$aggregator" --aggregator-ca-cert "$work/aggregator.pem" \
    --max-per-credential 1000000 --cohort-pool 1 2>"$work/relay.log" &
relay_pid=$!
until python3 -c 'import ssl, sys, urllib.request
urllib.request.urlopen(sys.argv[1] + "/healthz", timeout=1,
                       context=ssl.create_default_context(cafile=sys.argv[2]))' \
    "$relay" "$work/relay.pem" 2>/dev/null; do sleep 0.1; done

# Terminal 3: the analyst creates the task at the aggregator.
"$tally" task create --server "$aggregator" --ca-cert "$work/aggregator.pem" --token "$analyst" \
    --algorithm triehh++ --dataset shakespeare --epsilon 1 --delta 1e-8 --json >"$work/task.json"
task="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$work/task.json")"
echo "created task $task"

# Terminal 4: the devices, at the relay; each seals its report to the key it fetches from the
# aggregator itself (never from the relay).
"$tally" fleet --server "$relay" --ca-cert "$work/relay.pem" --token "$devices" \
    --aggregator "$aggregator" --aggregator-ca-cert "$work/aggregator.pem" \
    --dataset shakespeare --task "$task"

# Terminal 3 again: the release (its guarantee says split) and the ledger.
"$tally" task result --server "$aggregator" --ca-cert "$work/aggregator.pem" --token "$analyst" \
    "$task" --top 10
"$tally" ledger --server "$aggregator" --ca-cert "$work/aggregator.pem" --token "$analyst"

echo
echo "The simulator, same data and parameters:"
"$tally" heavy-hitters --algorithm triehh++ --dataset shakespeare --epsilon 1 --delta 1e-8 --top 10
