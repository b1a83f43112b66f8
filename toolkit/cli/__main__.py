from toolkit.cli import console

console()
