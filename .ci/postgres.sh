# shellcheck shell=bash
# Sourced by .ci/run: a throwaway PostgreSQL cluster for the storage tests.
#
# Installs PostgreSQL from Debian's packages when its server programs are missing, starts a
# cluster with trust authentication on 127.0.0.1:54329 (TALLY_POSTGRES_PORT overrides the
# port; as the `postgres` user when run as root, as the current user otherwise), creates the
# database `tally_test` and exports TALLY_TEST_POSTGRES_URL. The cluster also accepts TLS with
# a server certificate for 127.0.0.1 and localhost signed by a CA made here with openssl (the
# CA's certificate is exported as TALLY_TEST_POSTGRES_CA for the tests' `sslrootcert`).
# Sourcing it again reuses the running cluster, or starts the stopped one, or makes a new one
# if the old directory is unusable.

# The first directory holding every program this script runs.
tally_postgres_bin() {
    local dir program candidates=()
    if command -v pg_ctl >/dev/null 2>&1; then
        candidates+=("$(dirname "$(readlink -f "$(command -v pg_ctl)")")")
    fi
    mapfile -t -O "${#candidates[@]}" candidates < <(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -rV)
    for dir in "${candidates[@]}"; do
        for program in initdb pg_ctl pg_isready psql createdb; do
            [ -x "$dir/$program" ] || continue 2
        done
        echo "$dir"
        return 0
    done
}

# Waits up to 10 s for the server a leftover pid file in data directory $1 names to exit;
# once it is gone (or a zombie), removes its pid file and its socket's lock file.
tally_postgres_stale_pid() {
    local dir="$1" port="$2" pid tries=0
    [ -f "$dir/postmaster.pid" ] || return 0
    pid="$(head -n 1 "$dir/postmaster.pid")"
    while [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null &&
        [ "$(ps -o stat= -p "$pid" | cut -c1)" != Z ] && [ "$tries" -lt 20 ]; do
        tries=$((tries + 1))
        sleep 0.5
    done
    if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null ||
        [ "$(ps -o stat= -p "$pid" | cut -c1)" = Z ]; then
        rm -f "$dir/postmaster.pid" "$dir/.s.PGSQL.$port.lock"
    fi
}

# Makes a CA and a server certificate for 127.0.0.1 and localhost signed by it in data
# directory $1 (server.crt, server.key, ca.crt), unless they are there, and turns TLS on in
# the running cluster on port $2 (a reload, no restart). Needs as_owner and $bin.
tally_postgres_tls() {
    local dir="$1" port="$2" user="$3" tries=0
    if ! command -v openssl >/dev/null 2>&1; then
        echo "installing openssl from Debian's packages" >&2
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || return 1
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssl >&2 || return 1
    fi
    if [ ! -f "$dir/server.crt" ] || [ ! -f "$dir/ca.crt" ]; then
        # Made by the cluster's owner in its data directory, the key readable by it alone,
        # as PostgreSQL requires.
        as_owner sh -c '
            set -e
            cd "$1"
            umask 077
            openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
                -days 30 -subj "/CN=tally CI PostgreSQL CA" -keyout ca.key -out ca.crt
            openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
                -subj "/CN=localhost" -keyout server.key -out server.csr
            printf "%s\n" "subjectAltName=IP:127.0.0.1,DNS:localhost" \
                "basicConstraints=critical,CA:FALSE" "extendedKeyUsage=serverAuth" >server.ext
            openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
                -days 30 -extfile server.ext -out server.crt
            rm -f ca.key server.csr server.ext ca.srl
        ' sh "$dir" >"$dir.openssl.log" 2>&1 || {
            cat "$dir.openssl.log" >&2
            return 1
        }
    fi
    # The tests read the CA's certificate outside the (owner-only) data directory.
    cp "$dir/ca.crt" "$dir.ca.crt" || return 1
    chmod 644 "$dir.ca.crt" || return 1
    local setting
    for setting in "ssl_cert_file = 'server.crt'" "ssl_key_file = 'server.key'" "ssl = on"; do
        "$bin/psql" -h 127.0.0.1 -p "$port" -U "$user" -d postgres -qX \
            -c "ALTER SYSTEM SET $setting" || return 1
    done
    "$bin/psql" -h 127.0.0.1 -p "$port" -U "$user" -d postgres -qtAX \
        -c "SELECT pg_reload_conf()" >/dev/null || return 1
    until [ "$("$bin/psql" -h 127.0.0.1 -p "$port" -U "$user" -d postgres -qtAX -c 'SHOW ssl')" = on ]; do
        tries=$((tries + 1))
        if [ "$tries" -ge 20 ]; then
            echo "PostgreSQL on port $port did not turn TLS on; its log:" >&2
            tail -n 20 "$dir/server.log" >&2
            return 1
        fi
        sleep 0.5
    done
}

tally_postgres() {
    local port="${TALLY_POSTGRES_PORT:-54329}" database=tally_test
    local dir="${TMPDIR:-/tmp}/tally-postgres-$port"
    local user bin action

    # The server programs: next to `pg_ctl` on PATH, else where Debian puts them, else
    # install them.
    bin="$(tally_postgres_bin)"
    if [ -z "$bin" ]; then
        echo "installing PostgreSQL from Debian's packages" >&2
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || return 1
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2 || return 1
        bin="$(tally_postgres_bin)"
        [ -n "$bin" ] || { echo "PostgreSQL's programs are still missing" >&2; return 1; }
    fi

    # The server refuses to run as root: use `postgres` (created by the packages) then.
    if [ "$(id -u)" = 0 ]; then
        user=postgres
        if ! id "$user" >/dev/null 2>&1; then
            useradd --system --user-group --no-create-home --shell /bin/sh "$user" || return 1
        fi
        as_owner() { (cd / && runuser -u postgres -- "$@"); }
    else
        user="$(id -un)"
        as_owner() { "$@"; }
    fi

    if "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" -U "$user" -d postgres; then
        action="reused the running cluster"
    else
        if [ -f "$dir/PG_VERSION" ] && [ "$(stat -c %U "$dir")" = "$user" ]; then
            action="restarted the cluster in $dir"
        else
            rm -rf "$dir" && mkdir -p "$dir" && chown "$user": "$dir" && chmod 700 "$dir" ||
                return 1
            as_owner "$bin/initdb" -D "$dir" -U "$user" --auth=trust --no-sync \
                --encoding=UTF8 --no-locale >"$dir.initdb.log" 2>&1 || {
                cat "$dir.initdb.log" >&2
                return 1
            }
            action="started a new cluster in $dir"
        fi
        # A server killed earlier may have left its pid file: give a dying one time to exit,
        # and drop the file if it names a dead (or zombie) process.
        tally_postgres_stale_pid "$dir" "$port"
        as_owner "$bin/pg_ctl" -D "$dir" -l "$dir/server.log" -w -t 60 \
            -o "-p $port -c listen_addresses=127.0.0.1 -k $dir -c fsync=off" start >/dev/null || {
            tail -n 20 "$dir/server.log" >&2
            return 1
        }
    fi

    local tries=0
    until "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" -U "$user" -d postgres; do
        tries=$((tries + 1))
        if [ "$tries" -ge 60 ]; then
            echo "PostgreSQL on port $port does not accept connections" >&2
            return 1
        fi
        sleep 0.5
    done

    local exists
    exists="$("$bin/psql" -h 127.0.0.1 -p "$port" -U "$user" -d postgres -tAq \
        -c "select 1 from pg_database where datname = '$database'")" || return 1
    if [ "$exists" != 1 ]; then
        "$bin/createdb" -h 127.0.0.1 -p "$port" -U "$user" "$database" || return 1
    fi

    tally_postgres_tls "$dir" "$port" "$user" || return 1

    export TALLY_TEST_POSTGRES_URL="postgres://$user@127.0.0.1:$port/$database"
    export TALLY_TEST_POSTGRES_CA="$dir.ca.crt"
    echo "PostgreSQL: $action; TALLY_TEST_POSTGRES_URL=$TALLY_TEST_POSTGRES_URL;" \
        "TLS with TALLY_TEST_POSTGRES_CA=$TALLY_TEST_POSTGRES_CA"
}

if tally_postgres; then
    unset -f tally_postgres tally_postgres_bin tally_postgres_stale_pid tally_postgres_tls as_owner
else
    unset -f tally_postgres tally_postgres_bin tally_postgres_stale_pid tally_postgres_tls as_owner
    return 1
fi
