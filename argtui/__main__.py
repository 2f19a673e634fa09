from argtui.cli import main

raise SystemExit(main())
