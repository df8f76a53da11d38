package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
)

// postInto posts body as JSON to url and decodes the answer into out.
func (c *Conn) postInto(ctx context.Context, url string, body, out any) error {
	resp, err := c.PostJSON(ctx, url, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(out); err != nil {
		return fmt.Errorf("%s: response is not the JSON expected: %v", url, err)
	}
	return nil
}

// LlamaTokenize asks llama-server at root (its address, no path) for
// text's tokens; special adds the BOS it gives a prompt.
func (c *Conn) LlamaTokenize(ctx context.Context, root, text string, special bool) ([]int, error) {
	var out struct {
		Tokens []int `json:"tokens"`
	}
	err := c.postInto(ctx, root+"/tokenize", map[string]any{"content": text, "add_special": special}, &out)
	return out.Tokens, err
}

// LlamaDetokenize asks llama-server at root for the text of tokens.
func (c *Conn) LlamaDetokenize(ctx context.Context, root string, tokens []int) (string, error) {
	var out struct {
		Content string `json:"content"`
	}
	err := c.postInto(ctx, root+"/detokenize", map[string]any{"tokens": tokens}, &out)
	return out.Content, err
}
