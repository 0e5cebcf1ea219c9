from jobledger.cli import main

main()
