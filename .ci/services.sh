#!/usr/bin/env bash
# Install the real services the tests start on loopback: Chromium (browser tests through Playwright's
# `executable_path`), Prometheus and promtool (monitor tests). PostgreSQL has its own script
# (.ci/postgres.sh), which also starts it. Idempotent; needs root (or passwordless sudo) on Debian.
#
#   source .ci/services.sh      # from .ci/run
#
# Tests find the binaries on PATH (or SILICA_TEST_CHROMIUM / SILICA_TEST_PROMETHEUS) and start them
# themselves on free loopback ports; a test whose service is missing fails rather than skips under CI=true.

_silica_services() {
    local sudo="" missing=()
    if [ "$(id -u)" != 0 ]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            sudo="sudo -n"
        else
            echo "services.sh: needs root or passwordless sudo to install packages" >&2
            return 1
        fi
    fi
    command -v chromium >/dev/null 2>&1 || missing+=(chromium)
    command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
    command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "services.sh: installing ${missing[*]} with apt-get" >&2
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null || return 1
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            "${missing[@]}" >/dev/null || return 1
    fi
    export SILICA_TEST_CHROMIUM="${SILICA_TEST_CHROMIUM:-$(command -v chromium)}"
    export SILICA_TEST_PROMETHEUS="${SILICA_TEST_PROMETHEUS:-$(command -v prometheus)}"
    echo "services.sh: chromium=$SILICA_TEST_CHROMIUM prometheus=$SILICA_TEST_PROMETHEUS" >&2
}

_silica_services
