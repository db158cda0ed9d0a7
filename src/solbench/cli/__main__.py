from solbench.cli import main

main()
