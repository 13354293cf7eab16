from tuidbg.cli import main

raise SystemExit(main())
