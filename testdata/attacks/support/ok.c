/* free/ok: the allowed program of the exec attacks; it does nothing. */
int main(void) { return 0; }
