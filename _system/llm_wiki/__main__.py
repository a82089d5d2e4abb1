from llm_wiki.cli import main

main()
