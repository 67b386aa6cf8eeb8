//go:build !unix

package cli

func openFilesLimit() uint64 { return 0 }
