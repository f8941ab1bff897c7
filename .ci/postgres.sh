# shellcheck shell=bash
# Sourced by .ci/run: a throwaway PostgreSQL cluster for the storage tests.
#
# Installs PostgreSQL from Debian's packages when its server programs are missing, starts a
# cluster with trust authentication on 127.0.0.1:54329 (as the `postgres` user when run as
# root, as the current user otherwise), creates the database `tally_test` and exports
# TALLY_TEST_POSTGRES_URL. Sourcing it again reuses the running cluster, or starts the stopped
# one, or makes a new one if the old directory is unusable.

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

tally_postgres() {
    local port=54329 database=tally_test
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

    export TALLY_TEST_POSTGRES_URL="postgres://$user@127.0.0.1:$port/$database"
    echo "PostgreSQL: $action; TALLY_TEST_POSTGRES_URL=$TALLY_TEST_POSTGRES_URL"
}

if tally_postgres; then
    unset -f tally_postgres tally_postgres_bin tally_postgres_stale_pid as_owner
else
    unset -f tally_postgres tally_postgres_bin tally_postgres_stale_pid as_owner
    return 1
fi
