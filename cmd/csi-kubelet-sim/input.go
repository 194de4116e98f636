package main

import (
	"github.com/spf13/pflag"
)

// Every input the user names is judged the same way in every command:
// -f and positional arguments are both files (the shell expands
// `-f *.yaml` into one -f and the rest as arguments), -R reads the
// subdirectories of a directory, and an input that holds nothing the
// command can use is an error (exit 2), never a quiet default.

// addFileFlags adds -f/--filename and -R/--recursive, kubectl's names.
func addFileFlags(fs *pflag.FlagSet, files *[]string, recursive *bool, usage string) {
	fs.StringArrayVarP(files, "filename", "f", nil, usage)
	fs.BoolVarP(recursive, "recursive", "R", false, "also read the subdirectories of a -f directory")
}
