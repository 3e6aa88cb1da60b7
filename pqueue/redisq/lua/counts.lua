-- counts: {waiting, delayed, reserved, stored so far} of the shard.
return counts()
