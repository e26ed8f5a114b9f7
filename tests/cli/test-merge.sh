. "$srcdir/tests/cli/lib.sh"
ok placeholder true
done_testing
