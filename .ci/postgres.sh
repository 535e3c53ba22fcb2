#!/usr/bin/env bash
# Start a PostgreSQL for the store tests and export SILICA_TEST_PG_URL.
#
#   source .ci/postgres.sh      # from .ci/run: exports SILICA_TEST_PG_URL into the caller's shell
#   bash .ci/postgres.sh        # by hand: prints SILICA_TEST_PG_URL=...
#
# Idempotent: installs PostgreSQL with apt-get only if it is missing, creates a cluster only if there is
# none, starts it only if it is down, and creates the role and database only if they do not exist.
# Meant for a fresh Debian CI machine running as root (or a user with passwordless sudo). It does not
# `set -e` or `exit` in the shell that sources it; on failure it prints why and returns non-zero.

_silica_pg_setup() {
    local user=silica password=silica db=silica port="${SILICA_PG_PORT:-5432}"
    local sudo="" ver status
    if [ "$(id -u)" != 0 ]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            sudo="sudo -n"
        else
            echo "postgres.sh: needs root or passwordless sudo to install and start PostgreSQL" >&2
            return 1
        fi
    fi
    if ! command -v pg_ctlcluster >/dev/null 2>&1 || ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
        echo "postgres.sh: installing PostgreSQL with apt-get" >&2
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null || return 1
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null || return 1
    fi
    ver=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
    if [ -z "$ver" ]; then
        echo "postgres.sh: no PostgreSQL server found under /usr/lib/postgresql" >&2
        return 1
    fi
    if ! pg_lsclusters -h 2>/dev/null | awk -v v="$ver" '$1 == v && $2 == "main" {found=1} END {exit !found}'; then
        $sudo pg_createcluster "$ver" main --port "$port" >/dev/null || return 1
    fi
    port=$(pg_lsclusters -h | awk -v v="$ver" '$1 == v && $2 == "main" {print $3}')
    status=$(pg_lsclusters -h | awk -v v="$ver" '$1 == v && $2 == "main" {print $4}')
    if [ "$status" != "online" ]; then
        $sudo pg_ctlcluster "$ver" main start || return 1
    fi
    local tries=0
    until pg_isready -q -h 127.0.0.1 -p "$port"; do
        tries=$((tries + 1))
        if [ "$tries" -gt 30 ]; then
            echo "postgres.sh: PostgreSQL did not accept connections on port $port within 30 s" >&2
            return 1
        fi
        sleep 1
    done
    _silica_psql() { $sudo su -s /bin/sh postgres -c "psql -X -q -p $port -v ON_ERROR_STOP=1 $*"; }
    if ! _silica_psql "-tAc \"SELECT 1 FROM pg_roles WHERE rolname = '$user'\"" | grep -q 1; then
        _silica_psql "-c \"CREATE ROLE $user LOGIN PASSWORD '$password'\"" || return 1
    fi
    if ! _silica_psql "-tAc \"SELECT 1 FROM pg_database WHERE datname = '$db'\"" | grep -q 1; then
        _silica_psql "-c \"CREATE DATABASE $db OWNER $user\"" || return 1
    fi
    unset -f _silica_psql
    export SILICA_TEST_PG_URL="postgresql+psycopg://$user:$password@127.0.0.1:$port/$db"
    echo "SILICA_TEST_PG_URL=$SILICA_TEST_PG_URL"
}

_silica_pg_setup
_silica_pg_rc=$?
unset -f _silica_pg_setup
# Sourced: hand the status back without closing the caller's shell. Run: exit with it.
(return 0 2>/dev/null) && return "$_silica_pg_rc"
exit "$_silica_pg_rc"
