"""Conversations 13-20 of the labelled conversation set (written for famulus).

Two named friends talk over five to seven dated sessions; neither is the
memory's owner, so every question names the person it asks about ("When did
Ingrid sign the lease?"). Turns are longer than in parts 1 and 2 (mostly 15
to 45 words, details in the middle of a sentence). The format is the same:
each turn is "TAG|S: text" or "S: text", S is O (the speaker under the
"owner" key) or F (the one under "friend"); TAG names an evidence turn.
"""

CONVERSATIONS = [
    {
        "owner": "Rafael",
        "friend": "Ingrid",
        "sessions": [
            (
                "2023-02-11",
                [
                    "F: Rafael! It feels like forever since we last talked properly. How did the move go, are you settled into the new place yet?",
                    "move|O: Mostly settled, thanks. The flat is above a bakery on Gloucester Road, so I wake up to the smell of bread at five, which is lovely until you're on night shifts and trying to sleep.",
                    "F: Ha, I'd be the size of a house living there. Are you still doing the night rota at the ambulance station?",
                    "paramedic|O: Three nights a week for now. The ambulance service changed the rotas in January, and honestly the nights are where you see the worst stuff, but the crew I'm with is brilliant.",
                    "bookshop_idea|F: My news is smaller but scary: I've been talking to my bank about a loan, because I want to open a secondhand bookshop and finally stop typing up court hearings for a living.",
                    "O: Ingrid, that's huge! You've been talking about that since we were at university, I still remember the list of shop names you wrote on a beer mat.",
                    "stenographer|F: Twelve years as a court stenographer is enough. My wrists are shot and I'm tired of listening to people's worst days, you know? Books feel like the opposite of that.",
                    "O: Completely get it. Let me know if you need someone to carry boxes, I'm stronger than I look after lifting stretchers all week.",
                ],
            ),
            (
                "2023-03-04",
                [
                    "O: How did the meeting with the bank go? I kept meaning to text you all week but the shifts swallowed me whole.",
                    "loan|F: They said yes to the loan last Thursday! It's smaller than I asked for, so the shop will have to start tiny, but it's real now. I've been looking at empty units near the harbour.",
                    "O: Brilliant news. Tiny is fine, tiny is cosy, and nobody wants to wander around a warehouse of old paperbacks anyway.",
                    "swim|O: On my side, I did something out of character and joined the open-water swimming club that meets at the lake every Sunday morning, wetsuit and all. The water was seven degrees.",
                    "water|F: You're mad. You couldn't pay me to get into a lake, I panic the moment my feet can't touch the bottom, ever since I nearly drowned on a school trip when I was nine.",
                    "O: I remember you telling me about that trip. We'll keep you on dry land, don't worry, you can hold the towels.",
                    "F: Dry land and a warm drink in a flask, that's my idea of outdoor sport. Honestly, I'd rather spend a Sunday morning in a library.",
                ],
            ),
            (
                "2023-04-16",
                [
                    "lease|F: Guess who signed a lease on Friday? The unit is a former bike repair shop on the corner of Mill Lane, and it still smells faintly of chain oil.",
                    "O: Mill Lane is perfect, you get loads of people walking past from the Saturday market. What are you going to call it?",
                    "name|F: I'm going to call it The Second Chapter. My mum thinks it sounds like a divorce support group, but I love it and it's already painted on the sign.",
                    "O: Tell your mum it's a great name. I'd buy a book there just for the name.",
                    "tri|O: I've got news too. The swimming thing got out of hand and I entered a sprint triathlon in Weymouth at the end of June, so I'm borrowing my cousin's road bike to train.",
                    "F: From seven-degree lakes to triathlons in two months. Who are you and what have you done with my lazy friend?",
                    "clears|O: Honestly, after a bad night shift it's the only thing that clears my head. I come home, I can't sleep, so I swim or cycle until the picture of the call goes away.",
                    "cat|F: That makes sense. I should also tell you I'm fostering a pair of tabby kittens for the cat rescue on Elm Street until they find a home, so my flat is complete chaos.",
                ],
            ),
            (
                "2023-05-27",
                [
                    "O: How are the kittens? Still shredding your curtains and walking across your keyboard at midnight?",
                    "keep|F: Don't judge me, but I couldn't give them back. I officially adopted them last weekend and named them Moby and Dickens, because of course I did.",
                    "O: Literary cats for a bookshop owner, that's perfect. They can sleep in the shop window and sell books for you.",
                    "open|F: The shop opens on the 10th of June, and I've been pricing boxes of donated paperbacks every evening. Half of them are crime novels, people in this town really love a murder.",
                    "O: I'll be there on opening day, as long as it's not one of my night shift weekends.",
                    "knee|O: Slight setback though, I twisted my knee carrying a patient down a narrow staircase on Tuesday, and the physio says no running at all for two weeks.",
                    "F: Oh no, right before the triathlon! Will you still be able to do it, or is this the end of the great Weymouth plan?",
                    "O: The physio thinks I'll be fine if I stick to swimming and the bike for now. Fingers crossed it holds up.",
                ],
            ),
            (
                "2023-07-08",
                [
                    "F: So?? How did Weymouth go? I've been dying to hear and you've been silent for a week.",
                    "finish|O: I finished! One hour twenty-four, the knee held up, and I was so emotional at the finish line that I cried in front of the whole swimming club. My sister Carmen came down to cheer.",
                    "F: Rafael, I'm so proud of you. Crying at the finish line is the correct response.",
                    "opening|F: Opening day at the shop was lovely too. We sold forty-one books, and an old man spent two hours in the poetry corner and then bought nothing, which I've decided is a compliment.",
                    "O: That's a great first day. Sorry again that I missed it, the rota changed at the last minute and I couldn't swap.",
                    "reading|F: Next I'm starting a monthly reading evening in the shop in September, on the first Wednesday, with cheap wine and whoever turns up. The first book will be a Norwegian crime novel.",
                    "O: Count me in, if I'm not on nights. I'll even read the book, probably.",
                    "course|O: Also, I'm applying to do a critical care paramedic course at the university next year. It means a year of study alongside work, but it's the next step I've wanted for ages.",
                    "F: You'd be amazing at that. You're the calmest person I know when things go wrong.",
                ],
            ),
            (
                "2023-08-19",
                [
                    "O: Carmen wants to visit the shop when she's over from Valencia in October, she reads more than anyone I know.",
                    "F: Bring her! I'll give her the family discount and a cat to hold while she browses.",
                    "hike|F: I'm trying to get out more, so on Saturday I walked the coast path from Lulworth to Durdle Door with Henrik, the vet who treats Moby and Dickens. That was our third date.",
                    "O: The cat vet! Ingrid, this is the best news of the summer. I want to meet him.",
                    "accepted|O: And I got a place on the critical care course, starting in February. My shifts will drop to two nights a week while I study, which my sleep schedule is thrilled about.",
                    "F: Rafael, that's fantastic. We have to celebrate properly.",
                    "O: Let's do something this autumn. I was thinking of a kayaking trip along the coast near Falmouth, if you fancy it?",
                    "no_kayak|F: You know how I feel about deep water, I'd spend the whole day gripping the sides. Let's find something with a lot more land in it.",
                    "O: Fair, fair. A pub with a view of the sea, then, and you can tell me everything about Henrik.",
                ],
            ),
        ],
        "questions": [
            (
                "single",
                "What did Ingrid do for work before she opened the bookshop?",
                ["bookshop_idea", "stenographer"],
            ),
            ("single", "What is Ingrid's shop called?", ["name"]),
            ("single", "What did Ingrid name her two cats?", ["keep"]),
            ("single", "What is underneath Rafael's new flat?", ["move"]),
            ("single", "How long did it take Rafael to complete the triathlon?", ["finish"]),
            (
                "multi-hop",
                "What sport did Rafael's cold-water swimming lead him to, and where did he race?",
                ["swim", "tri"],
            ),
            (
                "multi-hop",
                "How does the man Ingrid is dating know her pets?",
                ["hike", "keep", "cat"],
            ),
            ("multi-hop", "How did Rafael's job put his race at risk?", ["knee", "tri"]),
            (
                "multi-hop",
                "How will Rafael's studies change his work at the ambulance service?",
                ["accepted", "paramedic"],
            ),
            ("temporal", "When did the bank approve Ingrid's loan?", ["loan"]),
            ("temporal", "When did Ingrid sign the lease for her shop?", ["lease"]),
            ("temporal", "When did Rafael hurt his knee?", ["knee"]),
            ("temporal", "When did Ingrid adopt the kittens?", ["keep"]),
            ("temporal", "When does Rafael start his critical care training?", ["accepted"]),
            ("inference", "Would Ingrid enjoy a sea kayaking holiday?", ["water", "no_kayak"]),
            (
                "inference",
                "Would Ingrid like to join a crime fiction book club?",
                ["reading", "open"],
            ),
            ("inference", "Does exercise help Rafael deal with the stress of his job?", ["clears"]),
            (
                "inference",
                "Would Ingrid want to go back to working in a courtroom?",
                ["stenographer", "bookshop_idea"],
            ),
        ],
    },
    {
        "owner": "Keiko",
        "friend": "Tobias",
        "sessions": [
            (
                "2022-09-03",
                [
                    "O: Tobias! I finally have a free Saturday. How is the farmhouse coming along, does it have a roof yet?",
                    "farm|F: Half a roof. Mila and I bought the old farmhouse outside Grimma in June, and every weekend since then has been plaster dust and arguing about tiles, but we love it.",
                    "O: That sounds like the beginning of a romantic film, or maybe a horror film, I can't decide which.",
                    "carpenter|F: Both, depending on the day. The upside of being a carpenter is that I can build our kitchen myself, the downside is that I spend all week building other people's kitchens first.",
                    "translate|O: I know the feeling. I'm translating a 600-page Japanese novel into German for a publisher in Munich, and the deadline is March, so my evenings are gone too.",
                    "F: Six hundred pages, wow. What's it about, is it any good?",
                    "plot|O: It's about a family running a noodle shop in Kyoto over three generations. It's beautiful, but the dialect in the grandmother's chapters is driving me crazy, I rewrite every page four times.",
                    "baby|F: Also, and you're the first friend we're telling: Mila is pregnant, the baby is due in early January.",
                    "O: Tobias!! That's wonderful, congratulations to both of you! I'm going to be the most embarrassing honorary aunt.",
                ],
            ),
            (
                "2022-10-15",
                [
                    "F: The roof is finished, just in time for the autumn rain. How are the noodle-shop grandmothers treating you?",
                    "O: Slowly. I'm at page 180. But I found a new hobby that has nothing to do with words, which my brain badly needed.",
                    "telescope|O: I bought a second-hand telescope from a retired teacher in Connewitz two weeks ago, and I've been looking at Saturn's rings from my balcony. I actually gasped out loud the first time.",
                    "F: That's so nice. Can you see much with all the city lights around you?",
                    "O: Not a lot, the streetlights wash everything out. I'd love to go somewhere properly dark one day and see what all the fuss is about.",
                    "crowd|F: We went to the wine festival in the market square last weekend and I lasted forty minutes. Mila loved it, but crowds make me feel like I can't breathe, I always end up waiting by the exit.",
                    "O: I remember the Christmas market incident two years ago. You went completely grey.",
                    "F: Never again. Quiet pubs and empty fields only from now on, that's my rule.",
                ],
            ),
            (
                "2022-11-26",
                [
                    "O: How's Mila feeling? It can't be long to go now, is she still working?",
                    "nursery|F: She stopped last week, tired but happy. I spent the last three weekends building a cot out of the old oak beams we pulled out of the barn, which felt like the most meaningful thing I've ever made.",
                    "O: That's beautiful, Tobias. The baby will sleep in a piece of the house's history.",
                    "grandma|O: I've had some hard news, though. My grandmother in Osaka had a fall last week and broke her hip, and my mum says she keeps asking for me. I'm looking at flights for December.",
                    "F: I'm so sorry, Keiko. Go, the novel can wait a few weeks, family can't.",
                    "publisher|O: I wrote to the publisher on Monday and they moved my deadline from March to May, which was kind of them. So I fly to Osaka on the 9th of December.",
                    "F: Give her a hug from a stranger in Saxony, and look after yourself too.",
                ],
            ),
            (
                "2023-01-14",
                [
                    "born|F: She's here! Our daughter Frieda was born on the 4th of January, three days late, 3.4 kilos, and she has Mila's ears and my terrible temper.",
                    "O: Tobias, I'm crying! Welcome to the world, little one. How's Mila doing?",
                    "F: Sore and exhausted, but she's a hero. How was Japan? How's your grandmother?",
                    "osaka|O: Japan was bittersweet. Grandma is recovering and walking with a frame. I stayed with her for three weeks, and she taught me the Osaka slang I'd been getting wrong in the novel.",
                    "F: That's a perfect story. The book will be better for it, and so will you.",
                    "mochi|O: We made mochi together on New Year's Eve, pounding the rice in her courtyard with my uncles. I'm going to try to make it for you when things calm down.",
                    "sleep|F: Mochi would be very welcome. We're surviving on toast. Frieda sleeps in two-hour blocks and I've gone back to the workshop already, because self-employed people don't get paternity leave.",
                ],
            ),
            (
                "2023-02-25",
                [
                    "O: How are you surviving? Is Frieda sleeping any better, or are you both still zombies?",
                    "F: A little. Four hours on a good night. Mila and I take turns, and I drink my coffee out of a thermos so it's still hot when I remember it.",
                    "dark|O: I had a small adventure: I took a night train to the dark-sky park in the Rhön mountains last weekend and saw the Milky Way properly for the first time. I lay on a frozen field for two hours.",
                    "F: That sounds magical. Freezing, but magical.",
                    "club|O: I've joined the amateur astronomy society in Leipzig as well. They meet on the second Thursday of each month at the old observatory, and most members are retired engineers who adopted me immediately.",
                    "F: Of course they did. You'd be adopted by any club within five minutes.",
                    "kitchen|F: Our kitchen is finally done, by the way. I finished the oak countertops on Wednesday, after eight months of cooking on a camping stove in the living room.",
                    "O: Eight months! You two deserve a medal, or at least a proper oven.",
                ],
            ),
            (
                "2023-04-08",
                [
                    "done|O: I sent the finished translation to Munich on Monday, three weeks before the new deadline. I went for a long walk afterwards and didn't know what to do with my hands.",
                    "F: Congratulations! What's next for you, another enormous novel?",
                    "next|O: A short story collection by a woman from Hokkaido, much lighter work. And I'm going back to Osaka in August to spend my grandmother's ninetieth birthday with her.",
                    "F: That will mean the world to her, and to you.",
                    "christening|F: We're having a small naming party for Frieda at the farmhouse in May, just family and a few close friends, and we'd love you to come. No crowds, I promise.",
                    "O: I wouldn't miss it. Should I bring mochi, or is that too ambitious?",
                    "F: Please bring it. Mila has been talking about your mochi since January.",
                    "gift|O: Then I'll bring a box, and maybe a star map for Frieda's room, so she learns the constellations before she can walk.",
                ],
            ),
        ],
        "questions": [
            ("single", "What is the novel Keiko is translating about?", ["plot", "translate"]),
            ("single", "What did Tobias use to build the baby's cot?", ["nursery"]),
            ("single", "How much did Tobias's daughter weigh when she was born?", ["born"]),
            ("single", "Who did Keiko buy her telescope from?", ["telescope"]),
            ("single", "Where do the members of Keiko's astronomy society meet?", ["club"]),
            (
                "multi-hop",
                "Why did Keiko's publisher give her more time?",
                ["grandma", "publisher"],
            ),
            (
                "multi-hop",
                "What did Keiko's grandmother teach her that helped with the hardest chapters of the book?",
                ["osaka", "plot"],
            ),
            (
                "multi-hop",
                "Did Keiko finish the translation before her extended deadline?",
                ["done", "publisher"],
            ),
            ("temporal", "When was Tobias's daughter born?", ["born"]),
            ("temporal", "When did Keiko fly to Osaka to be with her grandmother?", ["publisher"]),
            ("temporal", "When did Keiko first see the Milky Way properly?", ["dark"]),
            ("temporal", "When did Tobias and Mila buy the farmhouse?", ["farm"]),
            ("temporal", "When did Keiko hand in the finished translation?", ["done"]),
            (
                "inference",
                "Would Tobias enjoy spending a day at a big music festival?",
                ["crowd", "christening"],
            ),
            (
                "inference",
                "Would a book about the night sky be a good present for Keiko?",
                ["telescope", "dark", "club"],
            ),
            ("inference", "Is Keiko close to her grandmother?", ["grandma", "osaka", "next"]),
            (
                "inference",
                "Could Tobias make his own furniture?",
                ["carpenter", "nursery", "kitchen"],
            ),
        ],
    },
]
