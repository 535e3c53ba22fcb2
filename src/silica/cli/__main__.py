from silica.cli.app import main

main()
