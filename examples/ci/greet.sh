#!/bin/sh
# greet NAME: says hello to NAME (the project examples/ci.yml builds).
name=${1:-world}
printf 'hello, %s\n' "$name"
