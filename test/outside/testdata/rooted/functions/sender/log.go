package main

import (
	"encoding/json"
	"fmt"
)

func logRecord(fields map[string]string) {
	line, _ := json.Marshal(fields)
	fmt.Println(string(line))
}
