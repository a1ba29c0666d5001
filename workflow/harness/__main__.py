import sys

if sys.argv[1:2] == ["watchdog"]:
    # Started beside every server (harness.measure.backends.start_watchdog), while that
    # server starts: it imports only what it runs, not the whole command line's modules.
    from harness.measure.backends import watch_main
    sys.exit(watch_main(sys.argv[2:]))

from harness.cli import main  # noqa: E402

sys.exit(main())
