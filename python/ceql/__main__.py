"""``python -m ceql``: the same command line as the ``ceql`` script."""

try:
    from ceql.cli import main
except KeyboardInterrupt:  # Ctrl-C while the engine loads: as quiet as later on
    raise SystemExit(130) from None

raise SystemExit(main())
