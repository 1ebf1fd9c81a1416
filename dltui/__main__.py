from dltui.cli import main

raise SystemExit(main())
