#!/bin/sh
# shout NAME: says hello to NAME, loudly.
printf 'HELLO, %s!\n' "$(printf '%s' "${1:-world}" | tr '[:lower:]' '[:upper:]')"
