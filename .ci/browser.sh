# shellcheck shell=bash
# Sourced by .ci/run: headless Chromium and its WebDriver for the console's browser test.
#
# Installs Debian's `chromium` and `chromium-driver` when /usr/bin/chromium or
# /usr/bin/chromedriver is missing, and exports TALLY_REQUIRE_BROWSER=1 so that the test fails
# instead of being ignored if they are still absent (crates/tally-cli/build.rs).

if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "Chromium is missing and only root can install it (apt-get install chromium chromium-driver)" >&2
        return 1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || return 1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >&2 || return 1
fi
export TALLY_REQUIRE_BROWSER=1
