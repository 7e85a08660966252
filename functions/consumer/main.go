// Command consumer is a placeholder until the runtime lands; see issue 2.
package main

func main() {}
