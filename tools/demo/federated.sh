#!/usr/bin/env bash
# The federated demo in one script: a server over TLS (a self-signed certificate the script
# makes), a TrieHH++ task on Shakespeare, a fleet of 835,229 simulated devices over HTTPS, the
# release and the ledger, then the simulator on the same data with the same parameters for
# comparison.
#
#   bash tools/demo/federated.sh [PORT]
set -euo pipefail
cd "$(dirname "$0")/../.."
port="${1:-8080}"
server="https://127.0.0.1:$port"
cargo build --release --quiet -p tally-cli
tally=target/release/tally
work="$(mktemp -d)"
trap 'kill "$serve_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
db="sqlite://$work/tally.db"

# The operator's first step, before the server runs: the population with its budget, and
# credentials, in its database (each token is printed once; the database keeps only its hash).
"$tally" population create --db "$db" shakespeare --budget-epsilon 10 --budget-delta 1e-5 \
    --min-cohort 100
"$tally" token create --db "$db" --role operator --name operator >"$work/operator.token"
analyst="$("$tally" token create --db "$db" --role analyst --population shakespeare --name analyst)"
# The simulated fleet checks in through the operator's credential, a relay for many devices
# (real devices each hold their own: `tally device enroll ... --out FILE`, then `--credentials FILE`).
devices="$(cat "$work/operator.token")"

# A self-signed certificate for 127.0.0.1; every client below trusts it (TALLY_CA_CERT is
# --ca-cert).
"$tally" cert --cert "$work/server.pem" --key "$work/server.key"
export TALLY_CA_CERT="$work/server.pem"

# Terminal 1: the server over TLS, with its SQLite database in a scratch directory.
"$tally" serve --listen "127.0.0.1:$port" --db "$db" --tls-cert "$work/server.pem" \
    --tls-key "$work/server.key" 2>"$work/serve.log" &
serve_pid=$!
until "$tally" ledger --server "$server" --token "$analyst" >/dev/null 2>&1; do sleep 0.1; done

# Terminal 2: the analyst creates the task.
export TALLY_TOKEN="$analyst"
"$tally" task create --server "$server" --algorithm triehh++ --dataset shakespeare \
    --epsilon 1 --delta 1e-8 --json >"$work/task.json"
task="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$work/task.json")"
echo "created task $task"

# Terminal 3: the devices, relayed by the operator's credential.
"$tally" fleet --server "$server" --token "$devices" --dataset shakespeare --task "$task"

# Terminal 2 again: the release and the ledger.
"$tally" task result --server "$server" "$task" --top 10
"$tally" ledger --server "$server"

echo
echo "The simulator, same data and parameters:"
"$tally" heavy-hitters --algorithm triehh++ --dataset shakespeare --epsilon 1 --delta 1e-8 --top 10
